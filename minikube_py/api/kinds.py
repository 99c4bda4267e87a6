"""The kinds registry: every resource the apiserver serves, and how it is named, scoped and stored.

A `Resource` describes one REST resource at one group/version: the names kubectl uses (`plural`,
`singular`, `kind`, `short_names`), whether it lives in a namespace, its `categories` (`all` is what
`kubectl get all` expands), its subresources (with, for a custom resource, the `ScalePaths` its `scale`
subresource reads and writes), and where its objects live in etcd. Discovery, routing, the
registry and the Tables all read this one table, so adding a kind starts here.

Not everything listed is stored: reviews are answered (`apiserver/authnreviews.py`, `accessreviews.py`),
metrics.k8s.io is computed from the kubelets' stats (`apiserver/metrics.py`), and the pod and node
subresources marked `proxied` are served by the node's kubelet through the apiserver
(`apiserver/nodeproxy.py`).

Several versions may serve the same stored objects (core/v1 and events.k8s.io/v1 events, autoscaling/v1 and
v2 HPAs): they share a `storage_prefix`, and the `storage_version` names the version objects are kept at.
Conversion between versions lives in `api/conversion.py`.

`RESOURCES` is built explicitly below (no import-time self-registration); `Registry` indexes it and refuses
duplicates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

READ_VERBS = ("get", "list", "watch")
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


# How a `proxied` subresource reaches the kubelet: CONNECT for kube's connecters (a connection upgraded to
# a stream, or a request proxied as it is), STREAM for a body streamed back (a container's log).
CONNECT, STREAM = "connect", "stream"


@dataclass(frozen=True)
class Subresource:
    """A subresource such as `status` or `scale`: its name, the kind it speaks and its verbs; `proxied`
    (CONNECT or STREAM) when the kubelet serves it rather than the registry."""

    name: str
    kind: str
    group: str = ""
    version: str = ""
    verbs: tuple[str, ...] = ("get", "patch", "update")
    proxied: str = ""


STATUS = "status"
SCALE = Subresource("scale", "Scale", "autoscaling", "v1")
# A connecter's verbs are its HTTP methods': GET (a WebSocket upgrade) is `get` and POST (SPDY) `create`;
# nodes/proxy passes on every method (HEAD and OPTIONS have no verb of their own).
_UPGRADE_VERBS = ("create", "get")
_PROXY_VERBS = ("create", "delete", "get", "patch", "update")
POD_STREAMS = (
    Subresource("attach", "PodAttachOptions", verbs=_UPGRADE_VERBS, proxied=CONNECT),
    Subresource("exec", "PodExecOptions", verbs=_UPGRADE_VERBS, proxied=CONNECT),
    Subresource("log", "Pod", verbs=("get",), proxied=STREAM),
    Subresource("portforward", "PodPortForwardOptions", verbs=_UPGRADE_VERBS, proxied=CONNECT),
)
NODE_PROXY = Subresource("proxy", "NodeProxyOptions", verbs=_PROXY_VERBS, proxied=CONNECT)


@dataclass(frozen=True)
class ScalePaths:
    """Where a custom resource keeps what its `scale` subresource shows (a CRD version's
    `subresources.scale`): simple JSON paths such as `.spec.size`; no `label_selector` leaves the Scale's
    selector empty."""

    spec_replicas: str
    status_replicas: str
    label_selector: str = ""


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[Subresource, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    storage_prefix: str = ""  # under /registry; defaults to the plural (with group for non-legacy prefixes)
    storage_version: str = ""  # "" = this version is the storage version
    singular_name: str = ""
    custom: bool = False  # served for a CustomResourceDefinition
    # a CRD's additionalPrinterColumns, each (name, type, format, description, priority, jsonPath)
    printer_columns: tuple[tuple[str, str, str, str, int, str], ...] = ()
    # a CRD's scale subresource paths; None: a built-in workload's `.spec.replicas`, `.status.replicas` and
    # `.spec.selector`
    scale_paths: ScalePaths | None = None

    @property
    def singular(self) -> str:
        return self.singular_name or self.kind.lower()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """`pods` or `deployments.apps`: how kube names the resource in messages and RBAC."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def key_prefix(self) -> str:
        return "/registry/" + (self.storage_prefix or self.plural) + "/"

    @property
    def stored_at(self) -> str:
        return self.storage_version or self.version

    def subresource(self, name: str) -> Subresource | None:
        for sub in self.subresources:
            if sub.name == name:
                return sub
        return None

    def has_status(self) -> bool:
        return self.subresource(STATUS) is not None


def _status(kind: str) -> Subresource:
    return Subresource(STATUS, kind)


def _r(group: str, version: str, kind: str, plural: str, *, status: bool = False, scale: bool = False,
       extra: tuple[Subresource, ...] = (), **kw: object) -> Resource:
    subs: tuple[Subresource, ...] = ()
    if status:
        subs += (_status(kind),)
    if scale:
        subs += (SCALE,)
    return Resource(group, version, kind, plural, subresources=subs + extra, **kw)  # type: ignore[arg-type]


_ALL = ("all",)

RESOURCES: tuple[Resource, ...] = (
    # core/v1
    _r("", "v1", "Namespace", "namespaces", namespaced=False, short_names=("ns",), status=True,
       extra=(Subresource("finalize", "Namespace", verbs=("update",)),),
       verbs=("create", "delete", "get", "list", "patch", "update", "watch")),
    _r("", "v1", "Pod", "pods", short_names=("po",), categories=_ALL, status=True,
       extra=(Subresource("binding", "Binding", verbs=("create",)),
              Subresource("eviction", "Eviction", "policy", "v1", verbs=("create",)), *POD_STREAMS)),
    _r("", "v1", "Binding", "bindings", verbs=("create",)),
    _r("", "v1", "Service", "services", short_names=("svc",), categories=_ALL, status=True,
       storage_prefix="services/specs",
       verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")),
    _r("", "v1", "Endpoints", "endpoints", short_names=("ep",), storage_prefix="services/endpoints",
       singular_name="endpoints"),
    _r("", "v1", "ConfigMap", "configmaps", short_names=("cm",)),
    _r("", "v1", "Secret", "secrets"),
    _r("", "v1", "ServiceAccount", "serviceaccounts", short_names=("sa",),
       extra=(Subresource("token", "TokenRequest", "authentication.k8s.io", "v1", verbs=("create",)),)),
    _r("", "v1", "Node", "nodes", namespaced=False, short_names=("no",), status=True, storage_prefix="minions",
       extra=(NODE_PROXY,)),
    _r("", "v1", "Event", "events", short_names=("ev",)),
    _r("", "v1", "LimitRange", "limitranges", short_names=("limits",)),
    _r("", "v1", "ResourceQuota", "resourcequotas", short_names=("quota",), status=True),
    _r("", "v1", "PersistentVolume", "persistentvolumes", namespaced=False, short_names=("pv",), status=True),
    _r("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", short_names=("pvc",), status=True),
    _r("", "v1", "PodTemplate", "podtemplates"),
    _r("", "v1", "ReplicationController", "replicationcontrollers", short_names=("rc",), categories=_ALL,
       status=True, scale=True, storage_prefix="controllers"),
    # apps/v1
    _r("apps", "v1", "Deployment", "deployments", short_names=("deploy",), categories=_ALL, status=True,
       scale=True),
    _r("apps", "v1", "ReplicaSet", "replicasets", short_names=("rs",), categories=_ALL, status=True, scale=True),
    _r("apps", "v1", "StatefulSet", "statefulsets", short_names=("sts",), categories=_ALL, status=True,
       scale=True),
    _r("apps", "v1", "DaemonSet", "daemonsets", short_names=("ds",), categories=_ALL, status=True),
    _r("apps", "v1", "ControllerRevision", "controllerrevisions"),
    # batch/v1
    _r("batch", "v1", "Job", "jobs", categories=_ALL, status=True),
    _r("batch", "v1", "CronJob", "cronjobs", short_names=("cj",), categories=_ALL, status=True),
    # coordination.k8s.io/v1
    _r("coordination.k8s.io", "v1", "Lease", "leases"),
    # discovery.k8s.io/v1
    _r("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices"),
    # events.k8s.io/v1 shares storage with core/v1 events
    _r("events.k8s.io", "v1", "Event", "events", short_names=("ev",), storage_prefix="events",
       storage_version="core/v1"),
    # scheduling.k8s.io/v1
    _r("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", namespaced=False, short_names=("pc",)),
    # storage.k8s.io/v1
    _r("storage.k8s.io", "v1", "StorageClass", "storageclasses", namespaced=False, short_names=("sc",)),
    # policy/v1
    _r("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", short_names=("pdb",), status=True),
    # autoscaling: v2 is the storage version, v1 converts
    _r("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", short_names=("hpa",),
       categories=_ALL, status=True),
    _r("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", short_names=("hpa",),
       categories=_ALL, status=True, storage_version="autoscaling/v2"),
    # networking.k8s.io/v1
    _r("networking.k8s.io", "v1", "Ingress", "ingresses", short_names=("ing",), status=True,
       storage_prefix="ingress"),
    _r("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", short_names=("netpol",)),
    # rbac.authorization.k8s.io/v1
    _r("rbac.authorization.k8s.io", "v1", "Role", "roles"),
    _r("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
    _r("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False),
    _r("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False),
    # admissionregistration.k8s.io/v1
    _r("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations",
       namespaced=False, categories=("api-extensions",)),
    _r("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations",
       namespaced=False, categories=("api-extensions",)),
    # authentication.k8s.io/v1: reviews are answered, never stored
    _r("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", namespaced=False, verbs=("create",)),
    _r("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", namespaced=False,
       verbs=("create",)),
    # authorization.k8s.io/v1: access reviews are answered by RBAC, never stored
    _r("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", namespaced=False,
       verbs=("create",)),
    _r("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", namespaced=False,
       verbs=("create",)),
    _r("authorization.k8s.io", "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews", verbs=("create",)),
    _r("authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", namespaced=False,
       verbs=("create",)),
    # apiextensions.k8s.io/v1
    _r("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False,
       short_names=("crd", "crds"), status=True,
       storage_prefix="apiextensions.k8s.io/customresourcedefinitions"),
    # metrics.k8s.io/v1beta1 (metrics-server's API): computed from the kubelets' stats, never stored; the
    # prefixes only keep them apart from core nodes and pods
    _r("metrics.k8s.io", "v1beta1", "NodeMetrics", "nodes", namespaced=False, verbs=("get", "list"),
       storage_prefix="metrics.k8s.io/nodes"),
    _r("metrics.k8s.io", "v1beta1", "PodMetrics", "pods", verbs=("get", "list"),
       storage_prefix="metrics.k8s.io/pods"),
)

# The order groups appear in discovery (kube lists the legacy group first, then by priority).
GROUP_ORDER = (
    "", "apps", "events.k8s.io", "authentication.k8s.io", "autoscaling", "batch", "policy",
    "rbac.authorization.k8s.io", "networking.k8s.io", "storage.k8s.io", "admissionregistration.k8s.io",
    "apiextensions.k8s.io", "scheduling.k8s.io", "coordination.k8s.io", "discovery.k8s.io",
)


@dataclass
class Registry:
    """Lookup tables over a set of resources: by (group, version, plural) and by (group, version, kind)."""

    resources: tuple[Resource, ...]
    _by_plural: dict[tuple[str, str, str], Resource] = field(default_factory=dict)
    _by_kind: dict[tuple[str, str, str], Resource] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for res in self.resources:
            self._index(res)

    def _index(self, res: Resource) -> None:
        key = (res.group, res.version, res.plural)
        if key in self._by_plural:
            raise ValueError(f"duplicate resource {res.group}/{res.version}/{res.plural}")
        self._by_plural[key] = res
        self._by_kind.setdefault((res.group, res.version, res.kind), res)

    def add(self, res: Resource) -> None:
        """Serve one more resource (a custom resource's version); refuses one that is already served."""
        self._index(res)
        self.resources = (*self.resources, res)

    def remove(self, group: str, version: str, plural: str) -> Resource | None:
        res = self._by_plural.pop((group, version, plural), None)
        if res is not None:
            self.resources = tuple(r for r in self.resources if r is not res)
            if self._by_kind.get((group, version, res.kind)) is res:
                del self._by_kind[(group, version, res.kind)]
        return res

    def lookup(self, group: str, version: str, plural: str) -> Resource | None:
        return self._by_plural.get((group, version, plural))

    def by_kind(self, group: str, version: str, kind: str) -> Resource | None:
        return self._by_kind.get((group, version, kind))

    def group_versions(self) -> dict[str, list[str]]:
        """Each group with its versions, preferred first, groups in discovery order."""
        found: dict[str, list[str]] = {}
        for res in self.resources:
            versions = found.setdefault(res.group, [])
            if res.version not in versions:
                versions.append(res.version)
        order = {g: i for i, g in enumerate(GROUP_ORDER)}
        groups = sorted(found, key=lambda g: (order.get(g, len(order)), g))
        return {g: sorted(found[g], key=_version_priority) for g in groups}

    def in_group_version(self, group: str, version: str) -> list[Resource]:
        return [r for r in self.resources if r.group == group and r.version == version]


def _version_priority(version: str) -> tuple[int, int, int]:
    """Kube's version ordering: GA before beta before alpha, higher numbers first (v2 before v1)."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (3, 0, 0)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor)


def default_registry() -> Registry:
    return Registry(RESOURCES)
