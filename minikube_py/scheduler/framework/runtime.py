"""The framework runtime: builds one profile's plugins and runs them at each extension point (kube's
`frameworkImpl`); it is also the `Handle` those plugins are given.

Where it sits: the scheduler builds one `Framework` per `config.Profile`. The scheduling cycle calls
`run_pre_filter_plugins` → `node_filter` (the cycle's `run_filter_plugins_with_nominated_pods`, over runs of
nodes) → `run_post_filter_plugins` (when nothing fits) → `run_pre_score_plugins` → `run_score_plugins` →
`run_reserve_plugins_reserve` → `run_permit_plugins`;
the binding cycle calls `wait_on_permit` → `run_pre_bind_plugins` → `run_bind_plugins` →
`run_post_bind_plugins`, and `run_reserve_plugins_unreserve` whenever a step after Reserve fails.

Filter and Score run on hundreds of nodes per cycle (kube spreads them over 16 goroutines), so their per-node
overhead is kept small: the Filter plugins PreFilter skipped are dropped once per cycle, not looked up on every
node; plugins that can (`interface.BatchFilterPlugin`, `BatchScorePlugin`) check or score many nodes in one
call, and normalise bare scores; the scores stay in columns (`NodeScores`), and a node's plugin scores are only
paired with the plugins' names when someone reads `NodePluginScores.scores`. The verdicts and scores are those of running the plugins node by node.

Usage rules:
* Each plugin is instantiated once per profile (`cls(args, handle)`), even when it serves several points;
  `pre_filter_extensions()` and `score_extensions()` are asked once, at construction. A bad plugin argument
  (`PluginArgsError`) or a failing constructor is a `config.ConfigError` naming the field.
* A plugin that raises never takes the scheduler down: the exception is logged and becomes an Error status
  naming the plugin (`Status.plugin`). Statuses that plugins return keep their reasons; the runtime only
  fills in `plugin`. Success is the shared `interface.SUCCESS`: never mutate a returned status you did not
  build.
* The scheduler sets `framework.snapshot` to the cycle's snapshot before PreFilter (or updates that object
  in place); plugins read it through the Handle.
* `recorder`, when set, is called as `recorder(point, plugin, node_name, value)` for every PreFilter and
  PreScore verdict (node_name ""), every Filter verdict (a Status, Success included), and for each node
  every plugin's raw "Score", its "NormalizeScore" (plugins that normalise) and its "WeightedScore" (what
  it adds to the total). It costs one `is None` test per plugin call when unset.
"""

from __future__ import annotations

import copy
import functools
import logging
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from minikube_py.client.clock import Clock, RealClock
from minikube_py.scheduler.framework.config import ConfigError, Profile
from minikube_py.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    SUCCESS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    PluginArgsError,
    Pod,
    PostFilterResult,
    PreFilterResult,
    Status,
)
from minikube_py.scheduler.framework.registry import Registry
from minikube_py.scheduler.framework.types import NodeInfo, NodeScore, PodInfo, QueuedPodInfo
from minikube_py.scheduler.framework.waiting import MAX_TIMEOUT, WaitingPod, WaitingPods

logger = logging.getLogger(__name__)

Recorder = Callable[[str, str, str, Any], None]
_ALL_EVENTS = [ClusterEventWithHint(ClusterEvent("*", ActionType.ALL))]
_REJECTING_POINTS = ("preEnqueue", "preFilter", "filter", "reserve", "permit")


class NodePluginScores:
    """One feasible node's score: each plugin's weighted score, in plugin order, and their sum. A cycle builds
    one per feasible node, so the per-plugin scores stay in the cycle's columns (one list per plugin, this node
    at `index`) until someone asks for them (explain mode, tests)."""

    __slots__ = ("name", "total_score", "_plugins", "_columns", "_index")

    def __init__(self, name: str, total_score: int, plugins: Sequence[str], columns: Sequence[Sequence[int]],
                 index: int) -> None:
        self.name, self.total_score = name, total_score
        self._plugins, self._columns, self._index = plugins, columns, index

    @property
    def scores(self) -> list[tuple[str, int]]:
        return [(plugin, column[self._index]) for plugin, column in zip(self._plugins, self._columns, strict=True)]


class NodeScores(Sequence[NodePluginScores]):
    """The scores of a cycle's feasible nodes, as columns: `names[i]` totals `totals[i]`. Host selection reads
    the columns; a `NodePluginScores` is made only for a node someone indexes (explain mode, tests)."""

    __slots__ = ("names", "totals", "_plugins", "_columns")

    def __init__(self, names: list[str], totals: list[int], plugins: Sequence[str],
                 columns: Sequence[Sequence[int]]) -> None:
        self.names, self.totals = names, totals
        self._plugins, self._columns = plugins, columns

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self.names))[index]]
        i = range(len(self.names))[index]  # negative indices, and IndexError past the end
        return NodePluginScores(self.names[i], self.totals[i], self._plugins, self._columns, i)


class Framework:
    """The plugins of one profile, ready to run; the `Handle` each of them holds."""

    def __init__(self, profile: Profile, registry: Registry | Mapping[str, type], *, snapshot: Any = None,
                 client: Any = None, informers: Any = None, event_recorder: Any = None,
                 clock: Clock | None = None, nominator: Any = None, waiting_pods: WaitingPods | None = None,
                 recorder: Recorder | None = None) -> None:
        self.profile = profile
        self.snapshot = snapshot
        self.client = client
        self.informers = informers
        self.event_recorder = event_recorder
        self.clock: Clock = clock or RealClock()
        self.nominator = nominator  # has nominated_pods_for_node(node_name), has_nominated_pods()
        self.waiting_pods = waiting_pods if waiting_pods is not None else WaitingPods()
        self.recorder = recorder
        self.plugins: dict[str, Any] = {}
        for name in dict.fromkeys(n for names in profile.plugins.values() for n in names):
            self.plugins[name] = self._instantiate(name, registry.get(name))
        self._bind_hooks()

    def _instantiate(self, name: str, cls: type | None) -> Any:
        if cls is None:
            raise ConfigError(f'profiles[{self.profile.index}]: plugin "{name}" does not exist')
        args = copy.deepcopy(self.profile.plugin_config.get(name, {}))
        try:
            return cls(args, self)
        except PluginArgsError as error:
            raise ConfigError(f"{self._args_path(name, error.path)}: {error.message}") from None
        except Exception as error:  # a broken plugin constructor is reported like bad config, not raised
            logger.exception("initializing plugin %s", name)
            raise ConfigError(f'initializing plugin "{name}": {type(error).__name__}: {error}') from None

    def _args_path(self, name: str, path: str) -> str:
        configured = list(self.profile.plugin_config)
        index = configured.index(name) if name in configured else len(configured)
        prefix = f"profiles[{self.profile.index}].pluginConfig[{index}].args"
        return f"{prefix}.{path}" if path else prefix

    def _bind_hooks(self) -> None:
        """Precompute (name, bound method) lists per point so the hot paths only iterate."""
        def at(point: str) -> list[tuple[str, Any]]:
            return [(name, self.plugins[name]) for name in self.profile.plugins.get(point, [])]

        self._pre_enqueue = [(n, p.pre_enqueue) for n, p in at("preEnqueue")]
        queue_sort = at("queueSort")
        self._less = queue_sort[0][1].less if queue_sort else None
        self._pre_filter = [(n, p.pre_filter) for n, p in at("preFilter")]
        self._pre_filter_extensions = [(n, ext) for n, p in at("preFilter")
                                       if (ext := _optional_call(p, "pre_filter_extensions")) is not None]
        self._filter = [(n, p.filter, getattr(p, "filter_nodes", None)) for n, p in at("filter")]
        self._post_filter = [(n, p.post_filter) for n, p in at("postFilter")]
        self._pre_score = [(n, p.pre_score) for n, p in at("preScore")]
        self._score = [(n, p.score, getattr(p, "score_nodes", None),
                        _normalizer(_optional_call(p, "score_extensions")), self.profile.weights.get(n, 1))
                       for n, p in at("score")]
        self._reserve = [(n, p.reserve) for n, p in at("reserve")]
        self._unreserve = [(n, p.unreserve) for n, p in reversed(at("reserve")) if hasattr(p, "unreserve")]
        self._permit = [(n, p.permit) for n, p in at("permit")]
        self._pre_bind = [(n, p.pre_bind) for n, p in at("preBind")]
        self._bind = [(n, p.bind) for n, p in at("bind")]
        self._post_bind = [(n, p.post_bind) for n, p in at("postBind")]

    # --- what the scheduler asks about the profile ------------------------------------------------------

    @property
    def profile_name(self) -> str:
        return self.profile.scheduler_name

    @property
    def percentage_of_nodes_to_score(self) -> int | None:
        return self.profile.percentage_of_nodes_to_score

    def list_plugins(self) -> dict[str, list[str]]:
        return {point: list(names) for point, names in self.profile.plugins.items()}

    def has_filter_plugins(self) -> bool:
        return bool(self._filter)

    def has_post_filter_plugins(self) -> bool:
        return bool(self._post_filter)

    def has_score_plugins(self) -> bool:
        return bool(self._score)

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """For each plugin that can reject a pod, the cluster events that may make it schedulable again."""
        events: dict[str, list[ClusterEventWithHint]] = {}
        for name, plugin in self.plugins.items():
            if not any(name in self.profile.plugins.get(point, ()) for point in _REJECTING_POINTS):
                continue
            try:
                events[name] = list(plugin.events_to_register()) if hasattr(plugin, "events_to_register") \
                    else _ALL_EVENTS
            except Exception:  # unknown interests: requeue the plugin's pods on any event, as kube does
                logger.exception("plugin %s: events_to_register failed", name)
                events[name] = _ALL_EVENTS
        return events

    # --- queueing ---------------------------------------------------------------------------------------

    def run_pre_enqueue_plugins(self, pod: Pod) -> Status:
        return self._first_failure("PreEnqueue", self._pre_enqueue, pod)

    def queue_sort_less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        try:
            return bool(self._less(a, b))  # type: ignore[misc]  # a profile always has one QueueSort
        except Exception:
            logger.exception("QueueSort plugin %s failed", self.profile.plugins["queueSort"][0])
            return False

    # --- scheduling cycle -------------------------------------------------------------------------------

    def run_pre_filter_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo],
                               ) -> tuple[PreFilterResult | None, Status, set[str]]:
        """PreFilter in order: the merged node restriction, the verdict, and the plugins that restricted."""
        skip: set[str] = set()
        result: PreFilterResult | None = None
        restricting: list[str] = []
        verdict = SUCCESS
        try:
            for name, pre_filter in self._pre_filter:
                try:
                    narrowed, status = pre_filter(state, pod, nodes)
                except Exception as error:
                    return None, self._raised("PreFilter", name, error), set()
                if self.recorder is not None:
                    self.recorder("PreFilter", name, "", status or SUCCESS)
                if status is not None and status.code == Code.SKIP:
                    skip.add(name)
                    continue
                if status is not None and status.code:
                    if status.code == Code.UNSCHEDULABLE:
                        verdict = status.with_plugin(name)  # the rest still run: preemption needs them
                        continue
                    if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                        return None, status.with_plugin(name), set()
                    return None, self._wrapped("PreFilter", name, status), set()
                if narrowed is not None and narrowed.node_names is not None:
                    restricting.append(name)
                    result = (result or PreFilterResult()).merge(narrowed)
                    if not result.node_names:
                        return result, _no_node_satisfies(restricting), set(restricting)
            return result, verdict, set(restricting)
        finally:
            state.skip_filter_plugins = skip

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        """Filter in order on one node, stopping at the first plugin that rejects it."""
        return self._run_filters(self._filters_to_run(state), state, pod, node_info)

    def node_filter(self, state: CycleState, pod: Pod) -> Callable[[Sequence[NodeInfo]], list[Status]]:
        """For one cycle, a function giving the `run_filter_plugins_with_nominated_pods` verdict of each node of a
        run of nodes (kube's `checkNode`, which kube runs on 16 nodes at once).

        While no pod is nominated anywhere (nearly always) and no recorder listens, each plugin checks the run's
        nodes that the plugins before it passed in one call (`BatchFilterPlugin`), and the plugins PreFilter
        skipped are left out once for the whole cycle; otherwise node after node."""
        if self.recorder is not None or (self.nominator is not None and self.nominator.has_nominated_pods()):
            check = functools.partial(self.run_filter_plugins_with_nominated_pods, state, pod)
            return lambda nodes: [check(node_info) for node_info in nodes]
        return functools.partial(self._run_filters_on_nodes, self._filters_to_run(state), state, pod)

    def _filters_to_run(self, state: CycleState) -> list[tuple[str, Any, Any]]:
        skip = state.skip_filter_plugins
        return [entry for entry in self._filter if entry[0] not in skip] if skip else self._filter

    def _run_filters(self, filters: list[tuple[str, Any, Any]], state: CycleState, pod: Pod,
                     node_info: NodeInfo) -> Status:
        recorder = self.recorder
        for name, filter_, _ in filters:
            try:
                status = filter_(state, pod, node_info)
            except Exception as error:
                status = self._raised("Filter", name, error)
            else:
                if status is not None and status.code:
                    status = self._failure("Filter", name, status)
            if recorder is not None:
                recorder("Filter", name, node_info.name, status or SUCCESS)
            if status is not None and status.code:
                return status
        return SUCCESS

    def _run_filters_on_nodes(self, filters: list[tuple[str, Any, Any]], state: CycleState, pod: Pod,
                              nodes: Sequence[NodeInfo]) -> list[Status]:
        """Each node's verdict as `_run_filters` gives it, got plugin by plugin: each plugin sees the nodes that
        every plugin before it passed, so a node's verdict is still that of the first plugin rejecting it."""
        verdicts: list[Status] = [SUCCESS] * len(nodes)
        passing = list(range(len(nodes)))  # the indices of the nodes no plugin rejected so far
        for entry in filters:
            candidates = nodes if len(passing) == len(nodes) else [nodes[i] for i in passing]
            rejected = self._rejections(entry, state, pod, candidates)
            if rejected:
                for index, status in rejected.items():
                    verdicts[passing[index]] = status
                passing = [i for index, i in enumerate(passing) if index not in rejected]
                if not passing:
                    break
        return verdicts

    def _rejections(self, entry: tuple[str, Any, Any], state: CycleState, pod: Pod,
                    nodes: Sequence[NodeInfo]) -> dict[int, Status]:
        """One Filter plugin's rejections of `nodes`, by index (in one call when the plugin filters in batches)."""
        name, _, filter_nodes = entry
        if filter_nodes is None:
            alone = [entry]
            return {index: status for index, node_info in enumerate(nodes)
                    if (status := self._run_filters(alone, state, pod, node_info)).code}
        try:
            rejected = filter_nodes(state, pod, nodes)
        except Exception as error:  # which node it choked on is unknown: an Error for all of them
            return dict.fromkeys(range(len(nodes)), self._raised("Filter", name, error))
        return {index: self._failure("Filter", name, status) for index, status in rejected.items()
                if status is not None and status.code}

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: Pod,
                                               node_info: NodeInfo) -> Status:
        """Filter with the node's nominated pods of equal or higher priority counted as running, then (if that
        passed) without them: the pod must fit both ways, since nominated pods may land elsewhere."""
        nominated = self.nominated_pods_for_node(node_info.name)
        if not nominated:  # the common case, on every node of every cycle: nothing to add
            return self.run_filter_plugins(state, pod, node_info)
        state_with, info_with, status = self._add_nominated_pods(state, pod, node_info, nominated)
        if not status.is_success():
            return status
        if state_with is not None and info_with is not None:
            status = self.run_filter_plugins(state_with, pod, info_with)
            if not status.is_success():
                return status
        return self.run_filter_plugins(state, pod, node_info)

    def _add_nominated_pods(self, state: CycleState, pod: Pod, node_info: NodeInfo, nominated: Sequence[PodInfo],
                            ) -> tuple[CycleState | None, NodeInfo | None, Status]:
        priority = int((pod.get("spec") or {}).get("priority") or 0)
        uid = (pod.get("metadata") or {}).get("uid", "")
        state_out: CycleState | None = None
        info_out: NodeInfo | None = None
        for pod_info in nominated:
            if pod_info.priority < priority or pod_info.uid == uid:
                continue
            if state_out is None or info_out is None:
                state_out, info_out = state.clone(), node_info.clone()
            info_out.add_pod(pod_info)
            status = self.run_pre_filter_extension_add_pod(state_out, pod, pod_info, info_out)
            if not status.is_success():
                return None, None, status
        return state_out, info_out, SUCCESS

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: Pod, pod_to_add: PodInfo,
                                         node_info: NodeInfo) -> Status:
        return self._run_extension("AddPod", state, pod, pod_to_add, node_info)

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: PodInfo,
                                            node_info: NodeInfo) -> Status:
        return self._run_extension("RemovePod", state, pod, pod_to_remove, node_info)

    def _run_extension(self, operation: str, state: CycleState, pod: Pod, pod_info: PodInfo,
                       node_info: NodeInfo) -> Status:
        method = "add_pod" if operation == "AddPod" else "remove_pod"
        for name, extensions in self._pre_filter_extensions:
            if name in state.skip_filter_plugins:
                continue
            try:
                status = getattr(extensions, method)(state, pod, pod_info, node_info)
            except Exception as error:
                return self._raised(f"{operation} on PreFilter", name, error)
            if status is not None and status.code:
                return self._wrapped(f"{operation} on PreFilter", name, status)
        return SUCCESS

    async def run_post_filter_plugins(self, state: CycleState, pod: Pod, statuses: Mapping[str, Status],
                                      ) -> tuple[PostFilterResult | None, Status]:
        """PostFilter in order until one succeeds or gives up for good (preemption lives here)."""
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for name, post_filter in self._post_filter:
            try:
                outcome, status = await post_filter(state, pod, statuses)
            except Exception as error:
                return None, self._raised("PostFilter", name, error)
            if status is None or status.is_success():
                return outcome, status or SUCCESS
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return outcome, status.with_plugin(name)
            if not status.is_rejected():
                return None, Status(Code.ERROR, list(status.reasons), plugin=name, error=status.error)
            result = outcome if outcome is not None else result
            reasons.extend(status.reasons)
            rejector = rejector or name
        return result, Status(Code.UNSCHEDULABLE, reasons, plugin=rejector)

    def run_pre_score_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status:
        skip: set[str] = set()
        try:
            for name, pre_score in self._pre_score:
                try:
                    status = pre_score(state, pod, nodes)
                except Exception as error:
                    return self._raised("PreScore", name, error)
                if self.recorder is not None:
                    self.recorder("PreScore", name, "", status or SUCCESS)
                if status is not None and status.code == Code.SKIP:
                    skip.add(name)
                elif status is not None and status.code:
                    return self._wrapped("PreScore", name, status)
            return SUCCESS
        finally:
            state.skip_score_plugins = skip

    def run_score_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo],
                          ) -> tuple[NodeScores, Status]:
        """Score every node with every plugin, normalise, weigh and sum; an Error status when any fails."""
        skip = state.skip_score_plugins
        plugins = [entry for entry in self._score if entry[0] not in skip] if skip else self._score
        recorder = self.recorder
        names: list[str] = []
        columns: list[list[int]] = []  # per plugin, its weighted score of each node
        totals = [0] * len(nodes)
        for name, score, score_nodes, normalize, weight in plugins:
            scores, status = self._plugin_scores(name, score, score_nodes, normalize, state, pod, nodes)
            if status is not None:
                return NodeScores([], [], [], []), status
            weighted = scores if weight == 1 else [value * weight for value in scores]
            if recorder is not None:
                for node, value in zip(nodes, weighted, strict=True):
                    recorder("WeightedScore", name, node.name, value)
            names.append(name)
            columns.append(weighted)
            totals = list(map(operator.add, totals, weighted))
        return NodeScores([node.name for node in nodes], totals, names, columns), SUCCESS

    def _plugin_scores(self, name: str, score: Any, score_nodes: Any, normalize: Any, state: CycleState, pod: Pod,
                       nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """One plugin's scores for all nodes (in one call when it scores in batches), normalised and checked to
        lie in [0, 100]."""
        recorder = self.recorder
        try:
            if score_nodes is not None:
                scores, status = score_nodes(state, pod, nodes)
                if status is not None and status.code:
                    return [], _score_error("running Score plugins", name, status.message())
            else:
                scores = []
                for node in nodes:
                    value, status = score(state, pod, node)
                    if status is not None and status.code:
                        return [], _score_error("running Score plugins", name, status.message())
                    scores.append(value)
            if len(scores) != len(nodes):
                return [], _score_error("running Score plugins", name,
                                        f"returned {len(scores)} scores for {len(nodes)} nodes")
            if recorder is not None:
                for node, value in zip(nodes, scores, strict=True):
                    recorder("Score", name, node.name, value)
            if normalize is not None:
                scores, status = normalize(state, pod, nodes, scores)
                if status is not None and status.code:
                    return [], _score_error("running Normalize on Score plugins", name, status.message())
                if len(scores) != len(nodes):
                    return [], _score_error("running Normalize on Score plugins", name,
                                            f"returned {len(scores)} scores for {len(nodes)} nodes")
                if recorder is not None:
                    for node, value in zip(nodes, scores, strict=True):
                        recorder("NormalizeScore", name, node.name, value)
            if scores and not MIN_NODE_SCORE <= min(scores) <= max(scores) <= MAX_NODE_SCORE:
                invalid = next(value for value in scores if not MIN_NODE_SCORE <= value <= MAX_NODE_SCORE)
                return [], _score_error(
                    "applying score defaultWeights on Score plugins", name,
                    f"returns an invalid score {invalid}, it should in the range of "
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing", prefix="")
        except Exception as error:
            return [], self._raised("Score", name, error)
        return scores, None

    def run_reserve_plugins_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return self._first_failure("Reserve", self._reserve, state, pod, node_name)

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Unreserve every Reserve plugin, in reverse order; failures are logged and the rest still run."""
        for name, unreserve in self._unreserve:
            try:
                unreserve(state, pod, node_name)
            except Exception:
                logger.exception("Unreserve of plugin %s failed for node %s", name, node_name)

    def run_permit_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """Permit in order; if any says Wait (and none rejects) the pod becomes a waiting pod."""
        waits: dict[str, float] = {}
        for name, permit in self._permit:
            try:
                status, timeout = permit(state, pod, node_name)
                timeout = min(float(timeout or 0), MAX_TIMEOUT)
            except Exception as error:
                return self._raised("Permit", name, error)
            if status is None or not status.code:
                continue
            if status.is_rejected():
                return status.with_plugin(name)
            if status.code != Code.WAIT:
                return self._wrapped("Permit", name, status)
            waits[name] = timeout
        if not waits:
            return SUCCESS
        self.waiting_pods.add(WaitingPod(pod, waits, self.clock))
        pod_name = (pod.get("metadata") or {}).get("name", "")
        message = f'one or more plugins asked to wait and no plugin rejected pod "{pod_name}"'
        return Status(Code.WAIT, [message])

    # --- binding cycle ----------------------------------------------------------------------------------

    def will_wait_on_permit(self, pod: Pod) -> bool:
        return self.waiting_pods.get((pod.get("metadata") or {}).get("uid", "")) is not None

    async def wait_on_permit(self, pod: Pod) -> Status:
        """Block while the pod waits at Permit; Success, or Unschedulable when rejected or timed out."""
        uid = (pod.get("metadata") or {}).get("uid", "")
        waiting = self.waiting_pods.get(uid)
        if waiting is None:
            return SUCCESS
        try:
            return await waiting.wait()
        finally:
            self.waiting_pods.remove(uid)

    async def run_pre_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for name, pre_bind in self._pre_bind:
            try:
                status = await pre_bind(state, pod, node_name)
            except Exception as error:
                return self._raised("PreBind", name, error)
            if status is not None and status.code:
                return self._failure("PreBind", name, status)
        return SUCCESS

    async def run_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """Bind plugins in order until one does not Skip; Skip when every one skipped."""
        status = Status(Code.SKIP)
        for name, bind in self._bind:
            try:
                status = await bind(state, pod, node_name) or SUCCESS
            except Exception as error:
                return self._raised("Bind", name, error)
            if status.code == Code.SKIP:
                continue
            if status.code:
                return self._failure("Bind", name, status)
            return status
        return status

    async def run_post_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for name, post_bind in self._post_bind:
            try:
                await post_bind(state, pod, node_name)
            except Exception:
                logger.exception("PostBind of plugin %s failed", name)

    # --- the rest of the Handle -------------------------------------------------------------------------

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return self.nominator.nominated_pods_for_node(node_name) if self.nominator is not None else ()

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def reject_waiting_pod(self, uid: str) -> bool:
        """Reject the pod if it waits at Permit (it was deleted, say); whether it was waiting."""
        waiting = self.waiting_pods.get(uid)
        if waiting is not None:
            waiting.reject("", "removed")
        return waiting is not None

    def iterate_over_waiting_pods(self, callback: Callable[[WaitingPod], None]) -> None:
        for waiting in self.waiting_pods:
            callback(waiting)

    # --- helpers ----------------------------------------------------------------------------------------

    def _first_failure(self, point: str, hooks: list[tuple[str, Any]], *args: Any) -> Status:
        for name, hook in hooks:
            try:
                status = hook(*args)
            except Exception as error:
                return self._raised(point, name, error)
            if status is not None and status.code:
                return self._failure(point, name, status)
        return SUCCESS

    def _failure(self, point: str, name: str, status: Status) -> Status:
        return status.with_plugin(name) if status.is_rejected() else self._wrapped(point, name, status)

    def _raised(self, point: str, name: str, error: Exception) -> Status:
        logger.error("%s plugin %s raised for profile %s", point, name, self.profile_name, exc_info=error)
        return Status(Code.ERROR, [f'running {point} plugin "{name}": {type(error).__name__}: {error}'],
                      plugin=name, error=error)

    @staticmethod
    def _wrapped(point: str, name: str, status: Status) -> Status:
        """A status a plugin may not return at this point (or an Error) as an Error naming the plugin."""
        return Status(Code.ERROR, [f'running {point} plugin "{name}": {status.message()}'], plugin=name,
                      error=status.error)


def _optional_call(plugin: Any, method: str) -> Any:
    hook = getattr(plugin, method, None)
    return hook() if hook is not None else None


Normalizer = Callable[[CycleState, Pod, Sequence[NodeInfo], list[int]], tuple[list[int], Status | None]]


def _normalizer(extensions: Any) -> Normalizer | None:
    """A plugin's NormalizeScore over bare scores in the nodes' order: its batch form when it has one, else its
    `normalize_score` on NodeScores made for the purpose; None when it does not normalise."""
    batch = getattr(extensions, "normalize_scores", None)
    if batch is not None:
        return lambda state, pod, nodes, scores: batch(state, pod, scores)
    normalize = getattr(extensions, "normalize_score", None)
    if normalize is None:
        return None

    def on_node_scores(state: CycleState, pod: Pod, nodes: Sequence[NodeInfo],
                       scores: list[int]) -> tuple[list[int], Status | None]:
        node_scores = [NodeScore(node.name, value) for node, value in zip(nodes, scores, strict=True)]
        status = normalize(state, pod, node_scores)
        return [node_score.score for node_score in node_scores], status

    return on_node_scores


def _no_node_satisfies(plugins: list[str]) -> Status:
    names = sorted(set(plugins))
    message = (f"node(s) didn't satisfy plugin {names[0]}" if len(names) == 1
               else f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously")
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [message])


def _score_error(context: str, name: str, message: str, prefix: str = "failed with: ") -> Status:
    return Status(Code.ERROR, [f'{context}: plugin "{name}" {prefix}{message}'], plugin=name)
