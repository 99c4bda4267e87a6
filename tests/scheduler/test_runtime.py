"""The framework runtime with small fake plugins: order, Skip, errors, scores, permit waits, binding."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from minikube_py.client.clock import FakeClock
from minikube_py.scheduler import nominator as nominations
from minikube_py.scheduler.framework.config import ConfigError, Profile
from minikube_py.scheduler.framework.interface import (
    SUCCESS,
    ActionType,
    Code,
    CycleState,
    PluginArgsError,
    PostFilterResult,
    PreFilterResult,
    Status,
)
from minikube_py.scheduler.framework.runtime import Framework
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo, QueuedPodInfo
from minikube_py.scheduler.framework.waiting import WaitingPod, go_duration

# --- builders -----------------------------------------------------------------------------------------------


def pod(name: str = "p", uid: str = "uid-p", priority: int = 0, cpu: str = "") -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "x"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    return {"metadata": {"name": name, "namespace": "default", "uid": uid},
            "spec": {"priority": priority, "containers": [container]}}


def node(name: str, cpu: str = "1") -> NodeInfo:
    return NodeInfo({"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "pods": "110"}}})


def plugin(name: str, **methods: Callable[..., Any]) -> Any:
    """A plugin class named `name` whose hooks are the given functions (without `self`)."""
    attrs: dict[str, Any] = {"name": name, "__init__": lambda self, args, handle: None}
    attrs.update({method: staticmethod(function) for method, function in methods.items()})
    return type(name, (), attrs)


def framework(points: dict[str, list[Any]], weights: dict[str, int] | None = None, **deps: Any) -> Framework:
    registry = {cls.name: cls for classes in points.values() for cls in classes}
    names = {point: [cls.name for cls in classes] for point, classes in points.items()}
    return Framework(Profile(plugins=names, weights=weights or {}), registry, **deps)


def calls_of(log: list[str], name: str, verdict: Status | None = None) -> Callable[..., Status | None]:
    def hook(*args: Any) -> Status | None:
        log.append(name)
        return verdict
    return hook


def unschedulable(reason: str) -> Status:
    return Status(Code.UNSCHEDULABLE, [reason])


# --- Filter -------------------------------------------------------------------------------------------------


def test_filters_run_in_configured_order_and_stop_at_the_first_rejection() -> None:
    log: list[str] = []
    first = plugin("First", filter=calls_of(log, "First"))
    second = plugin("Second", filter=calls_of(log, "Second", unschedulable("too small")))
    third = plugin("Third", filter=calls_of(log, "Third"))
    status = framework({"filter": [first, second, third]}).run_filter_plugins(CycleState(), pod(), node("n1"))
    assert (log, status.code, status.reasons, status.plugin) == (
        ["First", "Second"], Code.UNSCHEDULABLE, ["too small"], "Second")


def test_filters_of_plugins_whose_prefilter_skipped_do_not_run() -> None:
    log: list[str] = []
    skipper = plugin("Skipper", pre_filter=lambda s, p, n: (None, Status(Code.SKIP)),
                     filter=calls_of(log, "Skipper", unschedulable("never")))
    other = plugin("Other", pre_filter=lambda s, p, n: (None, None), filter=calls_of(log, "Other"))
    fw = framework({"preFilter": [skipper, other], "filter": [skipper, other]})
    state = CycleState()
    _, status, _ = fw.run_pre_filter_plugins(state, pod(), [node("n1")])
    assert status.is_success() and state.skip_filter_plugins == {"Skipper"}
    assert fw.run_filter_plugins(state, pod(), node("n1")).is_success()
    assert log == ["Other"]


def test_a_cycles_node_filter_leaves_out_what_prefilter_skipped() -> None:
    log: list[str] = []
    skipper = plugin("Skipper", pre_filter=lambda s, p, n: (None, Status(Code.SKIP)),
                     filter=calls_of(log, "Skipper", unschedulable("never")))
    picky = plugin("Picky", pre_filter=lambda s, p, n: (None, None),
                   filter=lambda s, p, n: unschedulable("too small") if n.name == "n2" else log.append(n.name))
    fw = framework({"preFilter": [skipper, picky], "filter": [skipper, picky]})
    state = CycleState()
    fw.run_pre_filter_plugins(state, pod(), [])
    first, second = fw.node_filter(state, pod())([node("n1"), node("n2")])
    assert first is SUCCESS and (second.code, second.reasons, second.plugin) == (
        Code.UNSCHEDULABLE, ["too small"], "Picky")
    assert log == ["n1"]


def rejects(*names: str, status: Status | None = None) -> Callable[..., Any]:
    """A Filter hook rejecting the nodes named (as Unschedulable "no <node>", or with `status`)."""
    return lambda s, p, n: (status or unschedulable(f"no {n.name}")) if n.name in names else None


def test_nodes_are_filtered_in_batches_as_one_by_one() -> None:
    log: list[tuple[str, list[str]]] = []

    def batch_of(name: str, hook: Callable[..., Any]) -> Callable[..., Any]:
        def filter_nodes(state: CycleState, pod: Any, nodes: list[NodeInfo]) -> dict[int, Status]:
            log.append((name, [n.name for n in nodes]))
            return {i: status for i, n in enumerate(nodes) if (status := hook(state, pod, n)) is not None}
        return filter_nodes

    first = plugin("First", filter=boom, filter_nodes=batch_of("First", rejects("n2")))
    node_by_node = plugin("NodeByNode", filter=rejects("n3", "n4", status=Status.as_error("disk on fire")))
    last = plugin("Last", filter=boom, filter_nodes=batch_of("Last", rejects("n2", "n5", "n6")))
    fw = framework({"filter": [first, node_by_node, last]})
    nodes = [node(f"n{i}") for i in range(1, 8)]
    verdicts = fw.node_filter(CycleState(), pod())(nodes)
    assert [(v.code, v.reasons, v.plugin) for v in verdicts] == [
        (Code.SUCCESS, [], ""), (Code.UNSCHEDULABLE, ["no n2"], "First"),
        (Code.ERROR, ['running Filter plugin "NodeByNode": disk on fire'], "NodeByNode"),
        (Code.ERROR, ['running Filter plugin "NodeByNode": disk on fire'], "NodeByNode"),
        (Code.UNSCHEDULABLE, ["no n5"], "Last"), (Code.UNSCHEDULABLE, ["no n6"], "Last"), (Code.SUCCESS, [], "")]
    assert log == [("First", [f"n{i}" for i in range(1, 8)]), ("Last", ["n1", "n5", "n6", "n7"])]
    one_by_one = framework({"filter": [plugin("First", filter=rejects("n2")), node_by_node,
                                       plugin("Last", filter=rejects("n2", "n5", "n6"))]})
    assert [(v.code, v.reasons) for v in verdicts] == [
        (v.code, v.reasons) for v in (one_by_one.run_filter_plugins(CycleState(), pod(), n) for n in nodes)]


def test_a_raising_batch_filter_is_an_error_on_every_node_it_was_given() -> None:
    fw = framework({"filter": [plugin("Bad", filter=lambda s, p, n: None, filter_nodes=boom)]})
    verdicts = fw.node_filter(CycleState(), pod())([node("n1"), node("n2")])
    assert [(v.code, v.plugin) for v in verdicts] == [(Code.ERROR, "Bad")] * 2
    assert verdicts[0].reasons == ['running Filter plugin "Bad": RuntimeError: boom']


def boom(*args: Any) -> Any:
    raise RuntimeError("boom")


@pytest.mark.parametrize(("hook", "message"), [
    (lambda s, p, n: Status.as_error("disk on fire"), 'running Filter plugin "Bad": disk on fire'),
    (lambda s, p, n: Status(Code.WAIT, ["later"]), 'running Filter plugin "Bad": later'),
    (boom, 'running Filter plugin "Bad": RuntimeError: boom'),
], ids=["an error status is reported as an Error naming the plugin",
        "a code Filter may not return becomes an Error",
        "a plugin that raises becomes an Error naming it instead of propagating"])
def test_filter_failures_that_are_not_rejections_become_errors(hook: Callable[..., Any],
                                                               message: str) -> None:
    fw = framework({"filter": [plugin("Bad", filter=hook)]})
    status = fw.run_filter_plugins(CycleState(), pod(), node("n"))
    assert (status.code, status.reasons, status.plugin) == (Code.ERROR, [message], "Bad")


# --- PreFilter ----------------------------------------------------------------------------------------------


def pre_filter(name: str, nodes: set[str] | None = None, status: Status | None = None,
               log: list[str] | None = None) -> Any:
    def hook(state: CycleState, pod: Any, all_nodes: Any) -> tuple[PreFilterResult | None, Status | None]:
        if log is not None:
            log.append(name)
        return (PreFilterResult(set(nodes)) if nodes is not None else None), status
    return plugin(name, pre_filter=hook)


PRE_FILTER_CASES = [  # (name, node names it restricts to, status) per plugin
    ("an Unschedulable PreFilter lets the others run and is reported",
     [("A", None, unschedulable("a says no")), ("B", None, None)],
     ["A", "B"], Code.UNSCHEDULABLE, ["a says no"], "A", None),
    ("an UnschedulableAndUnresolvable PreFilter stops the others",
     [("A", None, Status.unschedulable("gone", resolvable=False)), ("B", None, None)],
     ["A"], Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["gone"], "A", None),
    ("an Error from PreFilter stops the cycle and names the plugin",
     [("A", None, Status.as_error("bad")), ("B", None, None)],
     ["A"], Code.ERROR, ['running PreFilter plugin "A": bad'], "A", None),
    ("node restrictions from several plugins are intersected",
     [("A", {"n1", "n2"}, None), ("B", None, None), ("C", {"n2", "n3"}, None)],
     ["A", "B", "C"], Code.SUCCESS, [], "", {"n2"}),
    ("restrictions that leave no node name every restricting plugin",
     [("B", {"n1"}, None), ("A", {"n2"}, None), ("C", None, None)],
     ["B", "A"], Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
     ["node(s) didn't satisfy plugin(s) [A B] simultaneously"], "", set()),
    ("one plugin selecting no node is named alone",
     [("A", set(), None)], ["A"], Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
     ["node(s) didn't satisfy plugin A"], "", set()),
]


@pytest.mark.parametrize(("specs", "ran", "code", "reasons", "by", "nodes"),
                         [case[1:] for case in PRE_FILTER_CASES], ids=[case[0] for case in PRE_FILTER_CASES])
def test_prefilter_outcomes(specs: list[tuple[str, set[str] | None, Status | None]], ran: list[str],
                            code: Code, reasons: list[str], by: str, nodes: set[str] | None) -> None:
    log: list[str] = []
    plugins = [pre_filter(name, restrict, status, log) for name, restrict, status in specs]
    result, status, _ = framework({"preFilter": plugins}).run_pre_filter_plugins(CycleState(), pod(), [])
    assert (log, status.code, status.reasons, status.plugin) == (ran, code, reasons, by)
    assert (result.node_names if result is not None else None) == nodes


# --- Score --------------------------------------------------------------------------------------------------


class HalveToHundred:
    """Normalises scores so the best node gets 100."""

    @staticmethod
    def normalize_score(state: CycleState, pod: Any, scores: list[Any]) -> None:
        best = max(s.score for s in scores)
        for s in scores:
            s.score = s.score * 100 // best


def scorer(name: str, by_node: dict[str, int], normalize: bool = False, **extra: Callable[..., Any]) -> Any:
    hooks: dict[str, Callable[..., Any]] = {"score": lambda s, p, n: (by_node[n.name], None), **extra}
    if normalize:
        hooks["score_extensions"] = lambda: HalveToHundred()
    return plugin(name, **hooks)


def test_scores_are_normalised_weighted_and_summed_per_node() -> None:
    spread = scorer("Spread", {"n1": 10, "n2": 40}, normalize=True)  # → 25, 100
    image = scorer("Image", {"n1": 50, "n2": 0})
    fw = framework({"score": [spread, image]}, weights={"Spread": 2, "Image": 1})
    scores, status = fw.run_score_plugins(CycleState(), pod(), [node("n1"), node("n2")])
    assert status.is_success()
    assert [(s.name, s.scores, s.total_score) for s in scores] == [
        ("n1", [("Spread", 50), ("Image", 50)], 100), ("n2", [("Spread", 200), ("Image", 0)], 200)]


def test_plugins_whose_prescore_skipped_are_not_scored() -> None:
    skipper = scorer("Skipper", {"n1": 100}, pre_score=lambda s, p, n: Status(Code.SKIP))
    other = scorer("Other", {"n1": 7}, pre_score=lambda s, p, n: None)
    fw = framework({"preScore": [skipper, other], "score": [skipper, other]})
    state = CycleState()
    assert fw.run_pre_score_plugins(state, pod(), [node("n1")]).is_success()
    scores, _ = fw.run_score_plugins(state, pod(), [node("n1")])
    assert state.skip_score_plugins == {"Skipper"} and scores[0].scores == [("Other", 7)]


class ReverseInBatches:
    """Normalises bare scores (the batch form): the highest becomes 0, none at all 100 each."""

    normalize_score = staticmethod(boom)  # the runtime must use the batch form

    @staticmethod
    def normalize_scores(state: CycleState, pod: Any, scores: list[int]) -> tuple[list[int], Status | None]:
        return [100 - 100 * s // max(scores) for s in scores] if max(scores) else [100] * len(scores), None


def batch_scorer(name: str, by_node: dict[str, int], normalize: bool = False) -> Any:
    """A plugin that scores in batches; its node-by-node `score` raises, so it must not be called."""
    hooks: dict[str, Callable[..., Any]] = {
        "score": boom, "score_nodes": lambda s, p, nodes: ([by_node[n.name] for n in nodes], None)}
    if normalize:
        hooks["score_extensions"] = lambda: ReverseInBatches()
    return plugin(name, **hooks)


def test_plugins_that_score_in_batches_are_called_once_for_all_nodes() -> None:
    taints = batch_scorer("Taints", {"n1": 0, "n2": 1, "n3": 4}, normalize=True)  # → 100, 75, 0
    fit = batch_scorer("Fit", {"n1": 10, "n2": 20, "n3": 30})
    spread = scorer("Spread", {"n1": 10, "n2": 40, "n3": 20}, normalize=True)  # → 25, 100, 50
    seen: list[tuple[str, str, str, Any]] = []
    fw = framework({"score": [taints, fit, spread]}, weights={"Taints": 3, "Spread": 2},
                   recorder=lambda *call: seen.append(call))
    scores, status = fw.run_score_plugins(CycleState(), pod(), [node("n1"), node("n2"), node("n3")])
    assert status.is_success()
    assert [(s.name, s.scores, s.total_score) for s in scores] == [
        ("n1", [("Taints", 300), ("Fit", 10), ("Spread", 50)], 360),
        ("n2", [("Taints", 225), ("Fit", 20), ("Spread", 200)], 445),
        ("n3", [("Taints", 0), ("Fit", 30), ("Spread", 100)], 130)]
    assert [call for call in seen if call[1] == "Taints"] == [
        ("Score", "Taints", "n1", 0), ("Score", "Taints", "n2", 1), ("Score", "Taints", "n3", 4),
        ("NormalizeScore", "Taints", "n1", 100), ("NormalizeScore", "Taints", "n2", 75),
        ("NormalizeScore", "Taints", "n3", 0),
        ("WeightedScore", "Taints", "n1", 300), ("WeightedScore", "Taints", "n2", 225),
        ("WeightedScore", "Taints", "n3", 0)]


def test_a_batch_of_scores_that_does_not_match_the_nodes_is_an_error() -> None:
    short = plugin("Short", score=boom, score_nodes=lambda s, p, nodes: ([7], None))
    scores, status = framework({"score": [short]}).run_score_plugins(CycleState(), pod(), [node("n1"), node("n2")])
    assert len(scores) == 0 and (status.code, status.plugin) == (Code.ERROR, "Short")
    assert status.message() == 'running Score plugins: plugin "Short" failed with: returned 1 scores for 2 nodes'


@pytest.mark.parametrize(("score_plugin", "message"), [
    (scorer("Wild", {"n1": 101}),
     'applying score defaultWeights on Score plugins: plugin "Wild" returns an invalid score 101, it '
     "should in the range of [0, 100] after normalizing"),
    (scorer("Wild", {"n1": -1}), 'plugin "Wild" returns an invalid score -1'),
    (plugin("Wild", score=lambda s, p, n: (0, Status.as_error("no data"))),
     'running Score plugins: plugin "Wild" failed with: no data'),
    (plugin("Wild", score=lambda s, p, n: (0, None),
            score_extensions=lambda: plugin("E", normalize_score=lambda *args: Status.as_error("div"))),
     'running Normalize on Score plugins: plugin "Wild" failed with: div'),
    (plugin("Wild", score=boom), 'running Score plugin "Wild": RuntimeError: boom'),
    (plugin("Wild", pre_score=boom, score=lambda s, p, n: (0, None)), 'running PreScore plugin "Wild": '),
], ids=["a score above 100 after normalising is an error", "a negative score is an error",
        "a Score error status fails scoring", "a NormalizeScore error fails scoring",
        "a raising Score plugin fails scoring with an Error naming it",
        "a raising PreScore plugin fails with an Error naming it"])
def test_scoring_failures_are_errors_naming_the_plugin(score_plugin: type, message: str) -> None:
    fw = framework({"preScore": [score_plugin] if hasattr(score_plugin, "pre_score") else [],
                    "score": [score_plugin]})
    state = CycleState()
    status = fw.run_pre_score_plugins(state, pod(), [node("n1")])
    if status.is_success():
        scores, status = fw.run_score_plugins(state, pod(), [node("n1")])
        assert len(scores) == 0
    assert status.code == Code.ERROR and status.plugin == "Wild" and message in status.message()


def test_the_recorder_sees_every_filter_verdict_and_every_stage_of_every_score() -> None:
    seen: list[tuple[str, str, str, Any]] = []
    ok = plugin("Ok", filter=lambda s, p, n: None)
    picky = plugin("Picky", filter=lambda s, p, n: unschedulable("no") if n.name == "n2" else None)
    fw = framework({"filter": [ok, picky], "score": [scorer("Spread", {"n1": 5}, normalize=True)]},
                   weights={"Spread": 3}, recorder=lambda *call: seen.append(call))
    fw.run_filter_plugins(CycleState(), pod(), node("n1"))
    fw.run_filter_plugins(CycleState(), pod(), node("n2"))
    fw.run_score_plugins(CycleState(), pod(), [node("n1")])
    verdicts = [(point, name, node_name, value.code if isinstance(value, Status) else value)
                for point, name, node_name, value in seen]
    assert verdicts == [
        ("Filter", "Ok", "n1", Code.SUCCESS), ("Filter", "Picky", "n1", Code.SUCCESS),
        ("Filter", "Ok", "n2", Code.SUCCESS), ("Filter", "Picky", "n2", Code.UNSCHEDULABLE),
        ("Score", "Spread", "n1", 5), ("NormalizeScore", "Spread", "n1", 100),
        ("WeightedScore", "Spread", "n1", 300)]


# --- construction -------------------------------------------------------------------------------------------


def test_a_plugin_serving_several_points_is_one_object() -> None:
    both = plugin("Both", filter=lambda s, p, n: None, score=lambda s, p, n: (0, None))
    fw = framework({"filter": [both], "score": [both]})
    assert list(fw.plugins) == ["Both"] and fw.has_filter_plugins() and fw.has_score_plugins()


class PickyArgs:
    name = "PickyArgs"

    def __init__(self, args: Any, handle: Any) -> None:
        if args.get("mode") != "ok":
            raise PluginArgsError("mode", f'Unsupported value: "{args.get("mode")}": supported values: "ok"')

    def filter(self, state: Any, pod: Any, node_info: Any) -> None:
        return None


class BrokenInit:
    name = "BrokenInit"

    def __init__(self, args: Any, handle: Any) -> None:
        raise KeyError("informers")

    def filter(self, state: Any, pod: Any, node_info: Any) -> None:
        return None


@pytest.mark.parametrize(("cls", "message"), [
    (PickyArgs,
     r'^profiles\[2\].pluginConfig\[1\].args.mode: Unsupported value: "bad": supported values: "ok"$'),
    (BrokenInit, r"^initializing plugin \"BrokenInit\": KeyError: 'informers'$"),
], ids=["args a plugin rejects are a config error at the pluginConfig path",
        "a failing constructor is a config error naming the plugin"])
def test_plugins_that_refuse_to_start_are_config_errors(cls: Any, message: str) -> None:
    profile = Profile(plugins={"filter": [cls.name]}, index=2,
                      plugin_config={"Other": {}, cls.name: {"mode": "bad"}})
    with pytest.raises(ConfigError, match=message):
        Framework(profile, {cls.name: cls})


def test_a_plugin_missing_from_the_registry_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r'^profiles\[0\]: plugin "Ghost" does not exist$'):
        Framework(Profile(plugins={"filter": ["Ghost"]}), {})


def test_plugins_without_events_to_register_are_requeued_on_every_event() -> None:
    fw = framework({"filter": [plugin("Plain", filter=lambda s, p, n: None)],
                    "score": [scorer("OnlyScore", {})]})
    events = fw.events_to_register()
    assert list(events) == ["Plain"]
    assert events["Plain"][0].event.resource == "*" and events["Plain"][0].event.action == ActionType.ALL


# --- queueing -----------------------------------------------------------------------------------------------


def test_pre_enqueue_rejection_names_the_gating_plugin() -> None:
    gate = plugin("Gate", pre_enqueue=lambda p: Status.unschedulable("waiting for gates", resolvable=False))
    status = framework({"preEnqueue": [gate]}).run_pre_enqueue_plugins(pod())
    assert (status.code, status.plugin) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Gate")


def test_queue_sort_uses_the_plugin_and_survives_a_raising_one() -> None:
    by_name = plugin("ByName", less=lambda a, b: a.pod_info.name < b.pod_info.name)
    a, b = QueuedPodInfo(PodInfo.of(pod("a"))), QueuedPodInfo(PodInfo.of(pod("b")))
    assert framework({"queueSort": [by_name]}).queue_sort_less(a, b) is True
    assert framework({"queueSort": [by_name]}).queue_sort_less(b, a) is False
    assert framework({"queueSort": [plugin("Bad", less=boom)]}).queue_sort_less(a, b) is False


# --- nominated pods -----------------------------------------------------------------------------------------


class Nominator:
    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = [PodInfo.of(p) for p in pods]

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return self.pods


def cpu_fits(state: CycleState, pod: Any, node_info: NodeInfo) -> Status | None:
    wanted = PodInfo.of(pod).requests.milli_cpu
    if node_info.requested.milli_cpu + wanted > node_info.allocatable.milli_cpu:
        return unschedulable("Insufficient cpu")
    return None


def needs_company(state: CycleState, pod: Any, node_info: NodeInfo) -> Status | None:
    return None if node_info.pods else unschedulable("node(s) didn't match pod affinity rules")


class CountAddPod:
    added: list[str] = []

    def add_pod(self, state: CycleState, pod: Any, pod_to_add: PodInfo, node_info: NodeInfo) -> None:
        CountAddPod.added.append(pod_to_add.name)

    def remove_pod(self, state: CycleState, pod: Any, pod_to_remove: PodInfo, node_info: NodeInfo) -> None:
        return None


NOMINATED_CASES = [
    ("a higher-priority nominated pod takes the room first", cpu_fits, [pod("big", "u-big", 10, "600m")],
     Code.UNSCHEDULABLE, ["big"]),
    ("an equal-priority nominated pod also counts", cpu_fits, [pod("big", "u-big", 5, "600m")],
     Code.UNSCHEDULABLE, ["big"]),
    ("a lower-priority nominated pod is ignored", cpu_fits, [pod("small", "u-small", 1, "600m")],
     Code.SUCCESS, []),
    ("the pod's own nomination is ignored", cpu_fits, [pod("p", "uid-p", 5, "600m")], Code.SUCCESS, []),
    ("the pod must also fit without the nominated pods", needs_company, [pod("big", "u-big", 10, "100m")],
     Code.UNSCHEDULABLE, ["big"]),
]


@pytest.mark.parametrize(("filter_", "nominated", "code", "added"), [case[1:] for case in NOMINATED_CASES],
                         ids=[case[0] for case in NOMINATED_CASES])
def test_filtering_with_nominated_pods(filter_: Callable[..., Any], nominated: list[dict[str, Any]],
                                       code: Code, added: list[str]) -> None:
    CountAddPod.added = []
    check = plugin("Check", pre_filter=lambda s, p, n: (None, None),
                   pre_filter_extensions=lambda: CountAddPod(), filter=filter_)
    fw = framework({"preFilter": [check], "filter": [check]}, nominator=Nominator(nominated))
    info = node("n1", cpu="1")
    status = fw.run_filter_plugins_with_nominated_pods(CycleState(), pod(priority=5, cpu="500m"), info)
    assert (status.code, CountAddPod.added) == (code, added)
    assert info.pods == []  # the snapshot's NodeInfo is never changed


def test_a_cycles_node_filter_counts_nominated_pods_once_any_pod_is_nominated() -> None:
    nominator = nominations.Nominator()
    fw = framework({"filter": [plugin("Check", filter=cpu_fits)]}, nominator=nominator)
    incoming = pod(priority=5, cpu="500m")
    assert fw.node_filter(CycleState(), incoming)([node("n1", cpu="1")])[0].is_success()
    nominator.add_nominated_pod(PodInfo.of(pod("big", "u-big", 10, "600m")), "n1")
    on_n1, on_n2 = fw.node_filter(CycleState(), incoming)([node("n1", cpu="1"), node("n2", cpu="1")])
    assert (on_n1.code, on_n1.reasons) == (Code.UNSCHEDULABLE, ["Insufficient cpu"]) and on_n2.is_success()


# --- reserve, permit ----------------------------------------------------------------------------------------


def test_reserve_stops_at_the_first_failure_and_unreserve_runs_in_reverse_order_past_failures() -> None:
    log: list[str] = []
    a = plugin("A", reserve=calls_of(log, "reserve A"), unreserve=calls_of(log, "unreserve A"))
    b = plugin("B", reserve=calls_of(log, "reserve B", unschedulable("taken")), unreserve=boom)
    c = plugin("C", reserve=calls_of(log, "reserve C"), unreserve=calls_of(log, "unreserve C"))
    fw = framework({"reserve": [a, b, c]})
    status = fw.run_reserve_plugins_reserve(CycleState(), pod(), "n1")
    fw.run_reserve_plugins_unreserve(CycleState(), pod(), "n1")
    assert (status.code, status.plugin) == (Code.UNSCHEDULABLE, "B")
    assert log == ["reserve A", "reserve B", "unreserve C", "unreserve A"]


def waiter(name: str, timeout: float) -> Any:
    return plugin(name, permit=lambda s, p, n: (Status(Code.WAIT), timeout))


def waiting(fw: Framework) -> WaitingPod:
    waiting_pod = fw.get_waiting_pod("uid-p")
    assert waiting_pod is not None
    return waiting_pod


async def started(fw: Framework, clock: FakeClock) -> asyncio.Task[Status]:
    assert fw.run_permit_plugins(CycleState(), pod(), "n1").code == Code.WAIT
    task = asyncio.ensure_future(fw.wait_on_permit(pod()))
    while clock.sleepers == 0:
        await asyncio.sleep(0)
    return task


async def test_a_waiting_pod_is_allowed_once_every_waiting_plugin_allows_it() -> None:
    clock = FakeClock()
    fw = framework({"permit": [waiter("A", 10), waiter("B", 10)]}, clock=clock)
    task = await started(fw, clock)
    waiting(fw).allow("A")
    await asyncio.sleep(0)
    assert not task.done() and waiting(fw).pending_plugins() == ["B"]
    waiting(fw).allow("B")
    assert (await asyncio.wait_for(task, 1)).is_success()
    assert fw.get_waiting_pod("uid-p") is None


async def test_a_waiting_pod_rejected_by_a_plugin_is_unschedulable_naming_it() -> None:
    clock = FakeClock()
    fw = framework({"permit": [waiter("A", 10)]}, clock=clock)
    task = await started(fw, clock)
    waiting(fw).reject("A", "gang incomplete")
    status = await asyncio.wait_for(task, 1)
    assert (status.code, status.reasons, status.plugin) == (Code.UNSCHEDULABLE, ["gang incomplete"], "A")


@pytest.mark.parametrize(("permits", "advance", "waited"), [
    ([waiter("Patient", 3600), waiter("Slow", 10)], 10, "10s"), ([waiter("Slow", 3600)], 900, "15m0s"),
], ids=["the first plugin timeout to pass rejects the pod", "timeouts are capped at fifteen minutes"])
async def test_a_waiting_pod_times_out_as_unschedulable(permits: list[Any], advance: float,
                                                        waited: str) -> None:
    clock = FakeClock()
    fw = framework({"permit": permits}, clock=clock)
    task = await started(fw, clock)
    clock.advance(advance - 1)
    await asyncio.sleep(0)
    assert not task.done()
    clock.advance(1)
    status = await asyncio.wait_for(task, 1)
    assert (status.code, status.plugin) == (Code.UNSCHEDULABLE, "Slow")
    assert status.reasons == [f"rejected due to timeout after waiting {waited} at plugin Slow"]


async def test_an_allow_after_the_timeout_has_passed_does_not_win() -> None:
    clock = FakeClock()
    fw = framework({"permit": [waiter("A", 5)]}, clock=clock)
    fw.run_permit_plugins(CycleState(), pod(), "n1")
    clock.advance(6)
    waiting(fw).allow("A")
    assert (await fw.wait_on_permit(pod())).code == Code.UNSCHEDULABLE


@pytest.mark.parametrize(("permits", "code", "by"), [
    ([plugin("Yes", permit=lambda s, p, n: (None, 0))], Code.SUCCESS, ""),
    ([waiter("W", 5), plugin("No", permit=lambda s, p, n: (unschedulable("no"), 0))],
     Code.UNSCHEDULABLE, "No"),
    ([plugin("Bad", permit=boom)], Code.ERROR, "Bad"),
], ids=["permit plugins that allow need no waiting", "a rejecting permit plugin wins over a waiting one",
        "a raising permit plugin is an Error naming it"])
def test_permit_outcomes_without_waiting(permits: list[type], code: Code, by: str) -> None:
    fw = framework({"permit": permits})
    status = fw.run_permit_plugins(CycleState(), pod(), "n1")
    assert (status.code, status.plugin, fw.will_wait_on_permit(pod())) == (code, by, False)


async def test_rejecting_a_waiting_pod_by_uid_ends_its_wait() -> None:
    fw = framework({"permit": [waiter("A", 10)]})
    fw.run_permit_plugins(CycleState(), pod(), "n1")
    assert fw.will_wait_on_permit(pod()) and fw.reject_waiting_pod("uid-p") and not fw.reject_waiting_pod("x")
    assert (await fw.wait_on_permit(pod())).reasons == ["removed"]


# --- binding cycle ------------------------------------------------------------------------------------------


def binder(name: str, verdict: Status | None, log: list[str]) -> Any:
    async def bind(state: CycleState, pod: Any, node_name: str) -> Status | None:
        log.append(name)
        return verdict
    return plugin(name, bind=bind)


@pytest.mark.parametrize(("verdicts", "ran", "code", "by"), [
    ([Status(Code.SKIP), None, None], ["First", "Second"], Code.SUCCESS, ""),
    ([Status(Code.SKIP), Status(Code.SKIP)], ["First", "Second"], Code.SKIP, ""),
    ([Status.as_error("apiserver down")], ["First"], Code.ERROR, "First"),
    ([], [], Code.SKIP, ""),
], ids=["a binder that skips hands the pod to the next", "when every binder skips the result is Skip",
        "a bind error names the binder", "no binder at all is Skip"])
async def test_bind_plugins_run_until_one_does_not_skip(verdicts: list[Status | None], ran: list[str],
                                                        code: Code, by: str) -> None:
    log: list[str] = []
    names = ["First", "Second", "Third"]
    fw = framework({"bind": [binder(names[i], v, log) for i, v in enumerate(verdicts)]})
    status = await fw.run_bind_plugins(CycleState(), pod(), "n1")
    assert (log, status.code, status.plugin) == (ran, code, by)


async def test_pre_bind_failure_and_post_bind_errors_are_contained() -> None:
    log: list[str] = []

    async def post_bind(state: CycleState, pod: Any, node_name: str) -> None:
        log.append("post bind")

    async def pre_bind(state: CycleState, pod: Any, node_name: str) -> Status:
        return Status.as_error("volume not ready")

    fw = framework({"preBind": [plugin("Vol", pre_bind=pre_bind)],
                    "postBind": [plugin("Crash", post_bind=boom), plugin("Note", post_bind=post_bind)]})
    status = await fw.run_pre_bind_plugins(CycleState(), pod(), "n1")
    assert (status.code, status.reasons) == (Code.ERROR, ['running PreBind plugin "Vol": volume not ready'])
    await fw.run_post_bind_plugins(CycleState(), pod(), "n1")
    assert log == ["post bind"]


# --- PostFilter ---------------------------------------------------------------------------------------------


def post_filter(name: str, result: PostFilterResult | None, status: Status | None) -> Any:
    async def hook(state: CycleState, pod: Any, statuses: Any) -> tuple[Any, Status | None]:
        return result, status
    return plugin(name, post_filter=hook)


@pytest.mark.parametrize(("classes", "code", "reasons", "by", "nominated"), [
    ([post_filter("A", None, unschedulable("a")), post_filter("B", PostFilterResult("n2"), None)],
     Code.SUCCESS, [], "", "n2"),
    ([post_filter("A", None, unschedulable("a")), post_filter("B", None, unschedulable("b"))],
     Code.UNSCHEDULABLE, ["a", "b"], "A", None),
    ([post_filter("A", None, Status.unschedulable("final", resolvable=False)), post_filter("B", None, None)],
     Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["final"], "A", None),
    ([plugin("A", post_filter=boom)], Code.ERROR, None, "A", None),
], ids=["the first PostFilter that succeeds decides", "rejections collect every plugin's reasons",
        "an unresolvable rejection stops the others", "a raising PostFilter is an Error naming it"])
async def test_post_filter_outcomes(classes: list[type], code: Code, reasons: list[str] | None, by: str,
                                    nominated: str | None) -> None:
    result, status = await framework({"postFilter": classes}).run_post_filter_plugins(CycleState(), pod(), {})
    assert (status.code, status.plugin) == (code, by) and (reasons is None or status.reasons == reasons)
    assert (result.nominated_node_name if result is not None else None) == nominated


def test_success_results_are_the_shared_success_status() -> None:
    fw = framework({"filter": [plugin("Ok", filter=lambda s, p, n: None)]})
    assert fw.run_filter_plugins(CycleState(), pod(), node("n1")) is SUCCESS


def test_go_duration_prints_like_go() -> None:
    assert [go_duration(s) for s in (0, 0.0005, 0.25, 1.5, 10, 90, 900, 3600, 3725.5)] == [
        "0s", "500µs", "250ms", "1.5s", "10s", "1m30s", "15m0s", "1h0m0s", "1h2m5.5s"]
