"""KubeSchedulerConfiguration decoding, kube's v1 defaulting and merging, and every validation error."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from minikube_py.scheduler.framework import config
from minikube_py.scheduler.framework.config import ConfigError
from minikube_py.scheduler.framework.registry import POINT_METHODS, Registry

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

# The extension points each default plugin serves in kube 1.32.
DEFAULT_POINTS = {
    "SchedulingGates": ["preEnqueue"], "PrioritySort": ["queueSort"], "NodeUnschedulable": ["filter"],
    "NodeName": ["filter"], "TaintToleration": ["filter", "preScore", "score"],
    "NodeAffinity": ["preFilter", "filter", "preScore", "score"], "NodePorts": ["preFilter", "filter"],
    "NodeResourcesFit": ["preFilter", "filter", "preScore", "score"],
    "VolumeBinding": ["preFilter", "filter"],  # kube's also has Reserve, PreBind, Score: WaitForFirstConsumer only
    "PodTopologySpread": ["preFilter", "filter", "preScore", "score"],
    "InterPodAffinity": ["preFilter", "filter", "preScore", "score"], "DefaultPreemption": ["postFilter"],
    "NodeResourcesBalancedAllocation": ["preScore", "score"], "ImageLocality": ["score"],
    "DefaultBinder": ["bind"],
}


def plugin_class(name: str, *points: str) -> type:
    methods = {POINT_METHODS[point]: lambda self, *args: None for point in points}
    return type(name, (), {"name": name, "__init__": lambda self, args, handle: None, **methods})


REGISTRY = Registry({name: plugin_class(name, *points) for name, points in DEFAULT_POINTS.items()}
                    | {"OtherSort": plugin_class("OtherSort", "queueSort"),
                       "Spare": plugin_class("Spare", "filter", "score", "reserve")})


class ZoneScore:
    """An out-of-tree plugin, named in configs as tests.scheduler.test_config:ZoneScore."""

    name = "ZoneScore"

    def __init__(self, args: Any, handle: Any) -> None:
        self.args = args

    def score(self, state: Any, pod: Any, node_info: Any) -> tuple[int, None]:
        return 0, None


class ImpostorFit:
    name = "NodeResourcesFit"

    def filter(self, state: Any, pod: Any, node_info: Any) -> None:
        return None


class Nameless:
    def filter(self, state: Any, pod: Any, node_info: Any) -> None:
        return None


def load(body: str = "") -> config.SchedulerConfiguration:
    return config.load(HEADER + textwrap.dedent(body), REGISTRY)


def plugins_yaml(plugins: str, extra: str = "") -> str:
    return "profiles:\n- schedulerName: default-scheduler\n  plugins:\n" + textwrap.indent(
        textwrap.dedent(plugins), "    ") + extra


# --- defaults -----------------------------------------------------------------------------------------------


def test_an_empty_configuration_gets_kubes_default_profile_expanded_to_each_extension_point() -> None:
    profile, = load().profiles
    assert profile.scheduler_name == "default-scheduler"
    assert profile.plugins == {
        "preEnqueue": ["SchedulingGates"], "queueSort": ["PrioritySort"],
        "preFilter": ["NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread",
                      "InterPodAffinity"],
        "filter": ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
                   "NodeResourcesFit", "VolumeBinding", "PodTopologySpread", "InterPodAffinity"],
        "postFilter": ["DefaultPreemption"],
        "preScore": ["TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread",
                     "InterPodAffinity", "NodeResourcesBalancedAllocation"],
        "score": ["TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread",
                  "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality"],
        "reserve": [], "permit": [], "preBind": [], "bind": ["DefaultBinder"], "postBind": [],
    }
    assert profile.weights == {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1,
                               "PodTopologySpread": 2, "InterPodAffinity": 2,
                               "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}


def test_an_empty_configuration_gets_kubes_top_level_defaults_and_default_plugin_args() -> None:
    configuration = config.default_configuration(REGISTRY)
    assert (configuration.percentage_of_nodes_to_score, configuration.pod_initial_backoff_seconds,
            configuration.pod_max_backoff_seconds, configuration.parallelism) == (None, 1, 10, 16)
    assert configuration.leader_election == config.LeaderElection(True, 15.0, 10.0, 2.0, "leases",
                                                                  "kube-scheduler", "kube-system")
    assert configuration.client_connection == config.ClientConnection("", 50.0, 100)
    args = configuration.profiles[0].plugin_config
    assert args["NodeResourcesFit"] == {"scoringStrategy": {"type": "LeastAllocated", "resources": [
        {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}
    assert args["DefaultPreemption"] == {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}
    assert "NodeName" not in args


def test_top_level_fields_and_go_durations_are_read() -> None:
    configuration = load("""
        percentageOfNodesToScore: 30
        podInitialBackoffSeconds: 2
        podMaxBackoffSeconds: 20
        parallelism: 4
        leaderElection: {leaderElect: true, leaseDuration: 1m30s, renewDeadline: 1500ms, retryPeriod: 0.5s,
                         resourceName: sched, resourceNamespace: mkpy-system}
        clientConnection: {kubeconfig: /etc/sched.conf, qps: 10, burst: 20, contentType: application/json}
        enableProfiling: false
    """)
    assert (configuration.percentage_of_nodes_to_score, configuration.pod_initial_backoff_seconds,
            configuration.pod_max_backoff_seconds, configuration.parallelism) == (30, 2, 20, 4)
    assert configuration.leader_election == config.LeaderElection(True, 90.0, 1.5, 0.5, "leases", "sched",
                                                                  "mkpy-system")
    assert configuration.client_connection == config.ClientConnection("/etc/sched.conf", 10.0, 20)


def test_a_single_profile_without_a_name_is_the_default_scheduler_and_others_keep_theirs() -> None:
    unnamed = load("profiles: [{percentageOfNodesToScore: 50}]").profiles[0]
    assert unnamed.scheduler_name == "default-scheduler"
    two = load("profiles: [{schedulerName: a}, {schedulerName: b, percentageOfNodesToScore: 0}]").profiles
    assert [(p.scheduler_name, p.percentage_of_nodes_to_score, p.index) for p in two] == [
        ("a", None, 0), ("b", 0, 1)]
    assert two[1].plugins == two[0].plugins


# --- merging with the defaults ------------------------------------------------------------------------------

MERGE_CASES = [
    ("disabling every score plugin leaves only the ones enabled at score",
     """
     score:
       disabled: [{name: "*"}]
       enabled: [{name: ImageLocality, weight: 5}]
     """, "score", ["ImageLocality"], {"ImageLocality": 5}),
    ("a default plugin enabled again at score runs first there with the new weight",
     """
     score:
       enabled: [{name: ImageLocality, weight: 7}]
     """, "score", ["ImageLocality", "TaintToleration", "NodeAffinity", "NodeResourcesFit",
                    "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation"],
     {"ImageLocality": 7}),
    ("a multiPoint weight replaces the default weight in place",
     """
     multiPoint:
       enabled: [{name: TaintToleration, weight: 9}]
     """, "score", ["TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread",
                    "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality"],
     {"TaintToleration": 9}),
    ("a plugin disabled at one point still runs at its other points",
     """
     score:
       disabled: [{name: NodeAffinity}]
     """, "score", ["TaintToleration", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity",
                    "NodeResourcesBalancedAllocation", "ImageLocality"], {}),
    ("a plugin disabled in multiPoint is gone from every point",
     """
     multiPoint:
       disabled: [{name: NodeAffinity}]
     """, "filter", ["NodeUnschedulable", "NodeName", "TaintToleration", "NodePorts", "NodeResourcesFit",
                     "VolumeBinding", "PodTopologySpread", "InterPodAffinity"], {}),
    ("a new plugin in multiPoint is appended at each point it implements",
     """
     multiPoint:
       enabled: [{name: Spare}]
     """, "reserve", ["Spare"], {}),
    ("a weight of zero means one, as in kube",
     """
     score:
       disabled: [{name: "*"}]
       enabled: [{name: Spare, weight: 0}]
     """, "score", ["Spare"], {"Spare": 1}),
    ("an explicit filter list after disabling all defaults keeps its own order",
     """
     filter:
       disabled: [{name: "*"}]
       enabled: [{name: NodePorts}, {name: NodeName}]
     """, "filter", ["NodePorts", "NodeName"], {}),
]


@pytest.mark.parametrize(("plugins", "point", "expected", "weights"),
                         [case[1:] for case in MERGE_CASES], ids=[case[0] for case in MERGE_CASES])
def test_plugin_sets_merge_with_the_defaults_like_kube(plugins: str, point: str, expected: list[str],
                                                       weights: dict[str, int]) -> None:
    profile = load(plugins_yaml(plugins)).profiles[0]
    assert profile.plugins[point] == expected
    assert {name: profile.weights[name] for name in weights} == weights


def test_disabling_every_multipoint_default_leaves_only_what_the_profile_enables() -> None:
    profile = load(plugins_yaml("""
        multiPoint:
          disabled: [{name: "*"}]
          enabled: [{name: PrioritySort}, {name: DefaultBinder}, {name: NodeName}]
    """)).profiles[0]
    assert {point: names for point, names in profile.plugins.items() if names} == {
        "queueSort": ["PrioritySort"], "filter": ["NodeName"], "bind": ["DefaultBinder"]}


def test_plugin_args_are_merged_over_kubes_default_args() -> None:
    profile = load(plugins_yaml("{}", """
  pluginConfig:
  - name: NodeResourcesFit
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeResourcesFitArgs
      scoringStrategy: {type: MostAllocated, resources: []}
      ignoredResources: [example.com/foo]
  - name: DefaultPreemption
    args: {minCandidateNodesAbsolute: 5}
  - name: Spare
""")).profiles[0]
    assert profile.plugin_config["NodeResourcesFit"] == {
        "scoringStrategy": {"type": "MostAllocated",
                            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]},
        "ignoredResources": ["example.com/foo"]}
    assert profile.plugin_config["DefaultPreemption"] == {"minCandidateNodesPercentage": 10,
                                                          "minCandidateNodesAbsolute": 5}
    assert list(profile.plugin_config)[:3] == ["NodeResourcesFit", "DefaultPreemption", "Spare"]
    assert profile.plugin_config["Spare"] == {}


def test_an_out_of_tree_plugin_named_by_module_and_class_is_registered_under_its_name() -> None:
    configuration = load(plugins_yaml("""
        score:
          enabled: [{name: "tests.scheduler.test_config:ZoneScore", weight: 4}]
    """, """
  pluginConfig:
  - name: ZoneScore
    args: {zone: a}
"""))
    profile = configuration.profiles[0]
    assert configuration.registry.get("ZoneScore") is ZoneScore
    assert "ZoneScore" not in REGISTRY  # the caller's registry is not changed
    assert profile.plugins["score"][-1] == "ZoneScore" and profile.weights["ZoneScore"] == 4
    assert profile.plugin_config["ZoneScore"] == {"zone": "a"}


def test_load_file_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(HEADER + "profiles: [{schedulerName: from-file}]\n")
    assert config.load_file(path, REGISTRY).profiles[0].scheduler_name == "from-file"


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^reading scheduler configuration .*missing.yaml: .*No such file"):
        config.load_file(tmp_path / "missing.yaml", REGISTRY)


# --- errors -------------------------------------------------------------------------------------------------

OUT_OF_TREE = "tests.scheduler.test_config"
ERROR_CASES = [
    ("malformed YAML is reported with its position", None, "a: [1,\n",
     r"^malformed YAML: .* \(line \d+, column \d+\)$"),
    ("a document that is not a mapping is refused", None, "- 1\n- 2\n",
     r"^the configuration must be a KubeSchedulerConfiguration object"),
    ("a missing apiVersion is required", None, "kind: KubeSchedulerConfiguration\n",
     r'^apiVersion: Required value: must be "kubescheduler.config.k8s.io/v1"$'),
    ("an unknown apiVersion is not registered", None,
     "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
     r'^no kind "KubeSchedulerConfiguration" is registered for version '
     r'"kubescheduler.config.k8s.io/v1beta3"'),
    ("another kind is not registered", None, "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Pod\n",
     r'^no kind "Pod" is registered for version "kubescheduler.config.k8s.io/v1"'),
    ("an unknown top-level field is a strict decoding error", "percentageOfNodesToScor: 5",
     None, r'^strict decoding error: unknown field "percentageOfNodesToScor"$'),
    ("an unknown extension point is a strict decoding error", plugins_yaml("scroe: {}"), None,
     r'^strict decoding error: unknown field "profiles\[0\].plugins.scroe"$'),
    ("an unknown field of a plugin entry is a strict decoding error",
     plugins_yaml("score: {enabled: [{name: ImageLocality, wieght: 2}]}"), None,
     r'^strict decoding error: unknown field "profiles\[0\].plugins.score.enabled\[0\].wieght"$'),
    ("a field of the wrong type names the field", "podMaxBackoffSeconds: ten", None,
     r'^podMaxBackoffSeconds: Invalid value: "ten": must be an integer$'),
    ("a profile that is not an object names its index", "profiles: [default-scheduler]", None,
     r'^profiles\[0\]: Invalid value: "default-scheduler": must be an object$'),
    ("a duplicate scheduler name is refused", "profiles: [{schedulerName: a}, {schedulerName: a}]", None,
     r'^profiles\[1\].schedulerName: Duplicate value: "a"$'),
    ("every profile of several needs a scheduler name", "profiles: [{schedulerName: a}, {}]", None,
     r"^profiles\[1\].schedulerName: Required value$"),
    ("an empty scheduler name is refused", "profiles: [{schedulerName: ''}]", None,
     r"^profiles\[0\].schedulerName: Required value$"),
    ("percentageOfNodesToScore above 100 is refused", "percentageOfNodesToScore: 101", None,
     r"^percentageOfNodesToScore: Invalid value: 101: not in valid range \[0-100\]$"),
    ("a profile's negative percentageOfNodesToScore is refused",
     "profiles: [{percentageOfNodesToScore: -1}]", None,
     r"^profiles\[0\].percentageOfNodesToScore: Invalid value: -1: not in valid range \[0-100\]$"),
    ("an initial backoff above the maximum is refused", "podInitialBackoffSeconds: 20", None,
     r"^podMaxBackoffSeconds: Invalid value: 10: must be greater than or equal to PodInitialBackoffSeconds$"),
    ("a zero initial backoff is refused", "podInitialBackoffSeconds: 0", None,
     r"^podInitialBackoffSeconds: Invalid value: 0: must be greater than 0$"),
    ("zero parallelism is refused", "parallelism: 0", None,
     r"^parallelism: Invalid value: 0: should be an integer value greater than zero$"),
    ("an unknown plugin is named by its position",
     plugins_yaml("score: {enabled: [{name: ImageLocality}, {name: Foo}]}"), None,
     r'^profiles\[0\].plugins.score.enabled\[1\].name: Invalid value: "Foo": plugin "Foo" does not exist$'),
    ("an unknown plugin in multiPoint is refused", plugins_yaml("multiPoint: {enabled: [{name: Foo}]}"), None,
     r'^profiles\[0\].plugins.multiPoint.enabled\[0\].name: Invalid value: "Foo": '
     r'plugin "Foo" does not exist$'),
    ("a plugin enabled at a point it does not implement is refused",
     plugins_yaml("score: {enabled: [{name: NodeName}]}"), None,
     r'^profiles\[0\].plugins.score.enabled\[0\].name: Invalid value: "NodeName": plugin "NodeName" does not '
     r"extend ScorePlugin plugin$"),
    ("a plugin enabled twice at one point is refused",
     plugins_yaml("filter: {enabled: [{name: Spare}, {name: Spare}]}"), None,
     r'^profiles\[0\].plugins.filter.enabled\[1\]: Duplicate value: "Spare"$'),
    ("a plugin entry without a name is refused", plugins_yaml("filter: {enabled: [{weight: 1}]}"), None,
     r"^profiles\[0\].plugins.filter.enabled\[0\].name: Required value$"),
    ("a profile without a queue sort plugin is refused", plugins_yaml("queueSort: {disabled: [{name: '*'}]}"),
     None, r"^profiles\[0\].plugins.queueSort: Invalid value: 0: only one queue sort plugin required"),
    ("a profile with two queue sort plugins is refused",
     plugins_yaml("queueSort: {enabled: [{name: OtherSort}]}"), None,
     r'^profiles\[0\].plugins.queueSort: Invalid value: 2: .* but got 2$'),
    ("profiles with different queue sort plugins are refused",
     "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n"
     "      disabled: [{name: '*'}]\n      enabled: [{name: OtherSort}]\n", None,
     r'^profiles\[1\].plugins.queueSort: Invalid value: "OtherSort": must be the same for all profiles$'),
    ("profiles with different queue sort args are refused",
     "profiles:\n- schedulerName: a\n- schedulerName: b\n"
     "  pluginConfig: [{name: PrioritySort, args: {x: 1}}]\n",
     None, r'^profiles\[1\].pluginConfig: Invalid value: "PrioritySort": queueSort must be the same for all'),
    ("a profile without a bind plugin is refused", plugins_yaml("bind: {disabled: [{name: DefaultBinder}]}"),
     None, r"^profiles\[0\].plugins.bind: Required value: at least one bind plugin is needed for profile "
     r'with scheduler name "default-scheduler"$'),
    ("pluginConfig for an unknown plugin is refused", "profiles: [{pluginConfig: [{name: Nope}]}]", None,
     r'^profiles\[0\].pluginConfig\[0\].name: Invalid value: "Nope": plugin "Nope" does not exist$'),
    ("pluginConfig twice for one plugin is refused",
     "profiles: [{pluginConfig: [{name: NodeName}, {name: NodeName}]}]", None,
     r'^profiles\[0\].pluginConfig\[1\]: Duplicate value: "NodeName"$'),
    ("plugin args of another kind are refused",
     "profiles: [{pluginConfig: [{name: NodeName, args: {kind: NodeAffinityArgs}}]}]", None,
     r'^profiles\[0\].pluginConfig\[0\].args.kind: Invalid value: "NodeAffinityArgs": '
     r'must be "NodeNameArgs"$'),
    ("an out-of-tree module that cannot be imported is refused",
     plugins_yaml("filter: {enabled: [{name: 'no_such_module.x:Plugin'}]}"), None,
     r"^profiles\[0\].plugins.filter.enabled\[0\].name: Invalid value: \"no_such_module.x:Plugin\": cannot "
     r"import module 'no_such_module.x': ModuleNotFoundError"),
    ("an out-of-tree class that does not exist is refused",
     plugins_yaml(f"filter: {{enabled: [{{name: '{OUT_OF_TREE}:Missing'}}]}}"), None,
     r"has no class 'Missing'$"),
    ("an out-of-tree class without a name attribute is refused",
     plugins_yaml(f"filter: {{enabled: [{{name: '{OUT_OF_TREE}:Nameless'}}]}}"), None,
     r"has no `name` attribute"),
    ("an out-of-tree class taking an in-tree plugin's name is refused",
     plugins_yaml(f"filter: {{enabled: [{{name: '{OUT_OF_TREE}:ImpostorFit'}}]}}"), None,
     r"a plugin named 'NodeResourcesFit' already exists"),
    ("a leader election duration that is not a Go duration is refused", "leaderElection: {leaseDuration: 15}",
     None, r'^leaderElection.leaseDuration: Invalid value: 15: must be a string$'),
    ("a malformed Go duration is refused", "leaderElection: {retryPeriod: 2 seconds}", None,
     r'^leaderElection.retryPeriod: Invalid value: "2 seconds": time: invalid duration "2 seconds"$'),
    ("a lease no longer than the renew deadline is refused",
     "leaderElection: {leaseDuration: 10s, renewDeadline: 10s}", None,
     r'^leaderElection.leaseDuration: Invalid value: "10s": '
     r"LeaseDuration must be greater than RenewDeadline$"),
    ("a zero retry period is refused", "leaderElection: {retryPeriod: 0s}", None,
     r'^leaderElection.retryPeriod: Invalid value: "0s": must be greater than zero$'),
    ("a lock other than leases is refused", "leaderElection: {resourceLock: endpoints}", None,
     r'^leaderElection.resourceLock: Invalid value: "endpoints": resourceLock value must be "leases"$'),
    ("scheduler extenders are refused", "extenders: [{urlPrefix: 'http://x'}]", None,
     r"^extenders: Forbidden: scheduler extenders are not supported$"),
    ("several validation errors are reported together", "parallelism: -1\npercentageOfNodesToScore: 200",
     None, r"^\[percentageOfNodesToScore: Invalid value: 200: .*, parallelism: Invalid value: -1: .*\]$"),
    ("score weights that could overflow the total are refused",
     plugins_yaml("score: {enabled: [{name: ImageLocality, weight: 92233720368547758}]}"), None,
     r"^profiles\[0\].plugins.score: Invalid value: .*total score of Score plugins could overflow$"),
]


@pytest.mark.parametrize(("body", "document", "message"), [case[1:] for case in ERROR_CASES],
                         ids=[case[0] for case in ERROR_CASES])
def test_invalid_configurations_are_refused_with_a_one_line_message(body: str | None, document: str | None,
                                                                      message: str) -> None:
    text = document if document is not None else HEADER + (body or "")
    with pytest.raises(ConfigError, match=message) as caught:
        config.load(text, REGISTRY)
    assert "\n" not in str(caught.value)
