"""The scheduling framework's contract: status codes, the cycle state, and one small Protocol per extension point.

A pod's trip through the scheduler is a fixed sequence of extension points (kube's scheduling framework):

    scheduling cycle (one pod at a time):
        PreEnqueue → QueueSort → PreFilter → Filter → [PostFilter] → PreScore → Score → NormalizeScore
        → Reserve → Permit
    binding cycle (asynchronous, so the next pod is scheduled meanwhile):
        WaitOnPermit → PreBind → Bind → PostBind          (Unreserve on any failure after Reserve)

A plugin is an object with a `name` that implements the Protocols of the points it serves; a profile
(`framework/config.py`) says which plugins run at which point, and `framework/runtime.py` runs them.

Usage rules:
* Results are data: every hook returns a `Status` (None counts as Success). Only a bug raises; the runtime
  turns an exception into an Error status naming the plugin.
* The hooks of the scheduling cycle (everything up to Permit) are synchronous and must not do I/O: they read
  the cycle's snapshot (`Handle.snapshot`) and the `CycleState`. The binding-cycle hooks and PostFilter are
  coroutines because they talk to the apiserver.
* Never mutate a pod or node dict you are given: they are shared with the informer caches.
* Score plugins receive the `NodeInfo` (newer kube does the same; 1.32 passes the node's name).
* Filter and Score plugins may also offer a batch form (`BatchFilterPlugin.filter_nodes`,
  `BatchScorePlugin.score_nodes`) that the runtime prefers; it must give what the one-node form gives.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from minikube_py.scheduler.framework.types import NodeInfo, NodeScore, PodInfo, QueuedPodInfo

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1

Pod = dict[str, Any]
Node = dict[str, Any]


class Code(enum.IntEnum):
    """A plugin's verdict, numbered as in kube (`framework.Code`)."""

    SUCCESS = 0
    ERROR = 1  # something went wrong inside the scheduler: the pod is retried
    UNSCHEDULABLE = 2  # the pod does not fit the node now; preemption might help
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3  # it will not fit this node whatever is evicted
    WAIT = 4  # Permit: hold the pod until allowed or timed out
    SKIP = 5  # PreFilter/PreScore: this plugin has nothing to do for this pod
    PENDING = 6  # the pod waits for something other than cluster state changes

    def __str__(self) -> str:
        return _CODE_NAMES[self]


_CODE_NAMES = {
    Code.SUCCESS: "Success", Code.ERROR: "Error", Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable", Code.WAIT: "Wait",
    Code.SKIP: "Skip", Code.PENDING: "Pending",
}


@dataclass
class Status:
    """A code, the human-readable reasons (they end up in FailedScheduling messages), and who said so."""

    code: Code = Code.SUCCESS
    reasons: list[str] = field(default_factory=list)
    plugin: str = ""  # the plugin that returned it; filled in by the runtime
    error: BaseException | None = None

    @classmethod
    def unschedulable(cls, *reasons: str, resolvable: bool = True) -> Status:
        return cls(Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE, list(reasons))

    @classmethod
    def as_error(cls, error: BaseException | str) -> Status:
        if isinstance(error, str):
            error = RuntimeError(error)
        return cls(Code.ERROR, [str(error) or type(error).__name__], error=error)  # httpx's timeouts say nothing

    @classmethod
    def state_not_found(cls, key: str) -> Status:
        """The error of a plugin whose PreFilter/PreScore did not write `key` into the CycleState."""
        return cls.as_error(f'reading "{key}" from cycleState: not found')

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_rejected(self) -> bool:
        """Unschedulable, unresolvable or pending: the pod did not pass, through no fault of the scheduler."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        self.plugin = self.plugin or plugin
        return self


SUCCESS = Status()  # shared and never mutated by the runtime (with_plugin is only called on non-success)


def is_success(status: Status | None) -> bool:
    return status is None or status.code == Code.SUCCESS


class CycleState:
    """Scratch space for one scheduling cycle, shared by the plugins that run in it.

    Plugins store what PreFilter/PreScore computed under their own key and read it back in Filter/Score.
    Preemption clones the state to try removing pods; values stored must then offer `clone()` (or be
    immutable). `skip_filter_plugins`/`skip_score_plugins` record the plugins whose PreFilter/PreScore said Skip.
    """

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.record_plugin_metrics = False
        self.pod_info: Any = None  # the cycle's pod, parsed once by the queue (types.pod_info_for reads it)

    def read(self, key: str) -> Any:
        """The value written under `key`; KeyError when no plugin wrote it (kube's ErrNotFound)."""
        return self._data[key]

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        copy = CycleState()
        copy._data = {k: v.clone() if hasattr(v, "clone") else v for k, v in self._data.items()}
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        copy.pod_info = self.pod_info
        return copy


# --- cluster events: what can make an unschedulable pod schedulable again -----------------------------------


class ActionType(enum.IntFlag):
    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE_POD_TOLERATION = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE = (UPDATE_NODE_ALLOCATABLE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT | UPDATE_NODE_CONDITION
              | UPDATE_NODE_ANNOTATION | UPDATE_POD_LABEL | UPDATE_POD_SCALE_DOWN | UPDATE_POD_TOLERATION
              | UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    ALL = ADD | DELETE | UPDATE


class QueueingHint(enum.Enum):
    SKIP = "QueueSkip"  # the event cannot make the pod schedulable: leave it where it is
    QUEUE = "Queue"  # it may: move the pod to the active or backoff queue


@dataclass(frozen=True)
class ClusterEvent:
    """A change to one kind of object, e.g. ClusterEvent("Node", ActionType.ADD); resource "*" matches any."""

    resource: str  # "Pod", "Node", "PersistentVolumeClaim", … or "*"
    action: ActionType
    label: str = ""

    def matches(self, other: ClusterEvent) -> bool:
        """Whether `other` (what happened) is covered by this registration."""
        return (self.resource in ("*", other.resource)) and bool(self.action & other.action)


@dataclass(frozen=True)
class ClusterEventWithHint:
    event: ClusterEvent
    # (pod, old object, new object) -> QueueingHint; None means always Queue
    hint: Any = None


# --- results passed between extension points ---------------------------------------------------------------


@dataclass
class PreFilterResult:
    """PreFilter may narrow the nodes to evaluate (NodeName, NodeAffinity on metadata.name); None = all."""

    node_names: set[str] | None = None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return PreFilterResult(set(other.node_names))
        return PreFilterResult(self.node_names & other.node_names)


@dataclass
class PostFilterResult:
    nominated_node_name: str = ""


# --- the extension points -----------------------------------------------------------------------------------


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Called before a pod enters the active queue; a non-success keeps it out (gated)."""


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Whether `a` should be scheduled before `b`. Exactly one QueueSort plugin is enabled per profile."""


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The cluster events that may make a pod this plugin rejected schedulable again."""


class PreFilterExtensions(Protocol):
    """Incremental updates of PreFilter state, used by preemption and nominated pods."""

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo) -> Status | None:
        ...

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo,
                   node_info: NodeInfo) -> Status | None:
        ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        """Compute what Filter needs once per cycle; Skip means this plugin's Filter will not run."""

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Whether the pod can run on this node."""


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    """A Filter plugin may also check many nodes in one call, which the runtime then prefers: kube checks nodes
    in parallel, and in Python a call per node and plugin costs more than most checks do."""

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> dict[int, Status]:
        """The nodes `filter` rejects, by their index in `nodes`, with its statuses ({} when all pass)."""


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    async def post_filter(self, state: CycleState, pod: Pod,
                          filtered_node_status: Mapping[str, Status]) -> tuple[PostFilterResult | None, Status]:
        """Called when no node passed Filter (preemption lives here)."""


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Compute what Score needs over the feasible nodes; Skip means this plugin's Score will not run."""


class ScoreExtensions(Protocol):
    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        """Rescale this plugin's scores in place into [MIN_NODE_SCORE, MAX_NODE_SCORE]."""


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        """A score for one feasible node; in [0, 100] after normalisation, then multiplied by the weight."""

    def score_extensions(self) -> ScoreExtensions | None:
        ...


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    """A Score plugin may also score all the feasible nodes in one call, which the runtime then prefers: kube
    scores nodes in parallel, and in Python a call per node and plugin costs more than most scores do. Its
    score extensions may likewise offer `BatchScoreExtensions.normalize_scores`."""

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """What `score` gives for each of `nodes`, in their order."""


class BatchScoreExtensions(ScoreExtensions, Protocol):
    def normalize_scores(self, state: CycleState, pod: Pod, scores: list[int]) -> tuple[list[int], Status | None]:
        """What `normalize_score` makes of the nodes' scores, over the bare scores (in the nodes' order)."""


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """The pod is assumed on `node_name`; claim what it needs."""

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Undo `reserve` (a later step failed). Must be idempotent."""


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """Success, Unschedulable, or Wait with a timeout in seconds (the pod waits until allowed)."""


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Bind the pod to the node; Skip hands the pod to the next Bind plugin."""


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    async def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        ...


EXTENSION_POINTS: dict[str, type] = {
    "preEnqueue": PreEnqueuePlugin, "queueSort": QueueSortPlugin, "preFilter": PreFilterPlugin,
    "filter": FilterPlugin, "postFilter": PostFilterPlugin, "preScore": PreScorePlugin, "score": ScorePlugin,
    "reserve": ReservePlugin, "permit": PermitPlugin, "preBind": PreBindPlugin, "bind": BindPlugin,
    "postBind": PostBindPlugin,
}  # the names KubeSchedulerConfiguration uses under `plugins:`, in cycle order


# --- what plugins can reach ---------------------------------------------------------------------------------


class NodeInfoLister(Protocol):
    def list(self) -> Sequence[NodeInfo]: ...

    def get(self, node_name: str) -> NodeInfo | None: ...

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]: ...

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]: ...


class Handle(Protocol):
    """What the framework gives each plugin at construction (kube's `framework.Handle`)."""

    @property
    def snapshot(self) -> NodeInfoLister:
        """This cycle's view of the nodes and the pods on them."""

    @property
    def client(self) -> Any:
        """The scheduler's `client.rest.RESTClient` (binding, preemption's deletes and status patches)."""

    @property
    def informers(self) -> Any:
        """The scheduler's `client.informer.SharedInformerFactory` (PDBs, Services, ReplicaSets, …)."""

    @property
    def event_recorder(self) -> Any:
        """The profile's `client.events.EventRecorder`."""

    @property
    def profile_name(self) -> str: ...

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        """Every enabled Filter on one node (preemption re-checks nodes with victims removed)."""

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        ...

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: Pod, pod_to_add: PodInfo,
                                         node_info: NodeInfo) -> Status: ...

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: PodInfo,
                                            node_info: NodeInfo) -> Status: ...

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]: ...

    def get_waiting_pod(self, uid: str) -> Any:
        """The Permit-waiting pod with this UID (to allow or reject it), else None."""


class PluginArgsError(ValueError):
    """A plugin's constructor refuses its args: `path` is relative to the args (`scoringStrategy.type`)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message
