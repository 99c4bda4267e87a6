"""VolumeBinding: PreFilter's checks on the pod's claims, Filter's checks of bound volumes against nodes, the
queueing hints, the scheduler watching claims, volumes and classes, and the plugin in the default profile.

The plugin reads real `client.listers.Lister`s over indexers filled by each case: no apiserver is involved.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Any

import pytest

from minikube_py.client import resources
from minikube_py.client.clock import FakeClock
from minikube_py.client.listers import Lister
from minikube_py.client.resources import STORAGE_CLASSES
from minikube_py.client.store import DeletedFinalStateUnknown, Indexer
from minikube_py.scheduler.eventhandlers import EventHandlers
from minikube_py.scheduler.framework import config
from minikube_py.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    QueueingHint,
    Status,
)
from minikube_py.scheduler.framework.runtime import Framework
from minikube_py.scheduler.framework.types import NodeInfo
from minikube_py.scheduler.plugins.volumebinding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_PV_NOT_EXIST,
    ERR_REASON_UNBOUND_IMMEDIATE,
    VolumeBinding,
)
from minikube_py.scheduler.queue import SchedulingQueue
from minikube_py.scheduler.snapshot import Snapshot

NS = "shop"
HOSTNAME = "kubernetes.io/hostname"
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

# --- builders -----------------------------------------------------------------------------------------------


def pod(*volumes: dict[str, Any], name: str = "web", uid: str = "uid-web") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": NS, "uid": uid},
        "spec": {"containers": [{"name": "app", "image": "nginx"}], "volumes": list(volumes)},
    }


def uses(claim_name: str, volume_name: str = "data") -> dict[str, Any]:
    return {"name": volume_name, "persistentVolumeClaim": {"claimName": claim_name}}


def ephemeral(volume_name: str = "scratch") -> dict[str, Any]:
    template = {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    return {"name": volume_name, "ephemeral": {"volumeClaimTemplate": template}}


PROJECTED_TOKEN = {
    "name": "kube-api-access",
    "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
}
CONFIG = {"name": "config", "configMap": {"name": "web-config"}}


def claim(
    name: str = "data",
    *,
    volume: str = "",
    bind_completed: bool | None = None,
    class_name: str | None = None,
    phase: str = "",
    deleting: bool = False,
    annotations: dict[str, str] | None = None,
    owner_uid: str = "",
    namespace: str = NS,
) -> dict[str, Any]:
    """A claim; one naming a volume is bound (bind-completed) unless `bind_completed=False`."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "annotations": dict(annotations or {})}
    if volume and bind_completed is not False:
        metadata["annotations"]["pv.kubernetes.io/bind-completed"] = "yes"
    if deleting:
        metadata["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    if owner_uid:
        metadata["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": owner_uid, "controller": True}
        ]
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if volume:
        spec["volumeName"] = volume
    if class_name is not None:
        spec["storageClassName"] = class_name
    status = {"phase": phase or ("Bound" if volume else "Pending")}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }


def persistent_volume(name: str, *terms: dict[str, Any]) -> dict[str, Any]:
    """A hostPath volume; `terms` are its required node affinity's nodeSelectorTerms (none: no affinity)."""
    spec: dict[str, Any] = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "hostPath": {"path": f"/tmp/{name}"},
    }
    if terms:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": list(terms)}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def on_hosts(*names: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": list(names)}]}


def storage_class(name: str, mode: str | None = "Immediate", **extra: Any) -> dict[str, Any]:
    sc = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "kubernetes.io/host-path",
        **extra,
    }
    if mode is not None:
        sc["volumeBindingMode"] = mode
    return sc


def node(name: str, **labels: str) -> NodeInfo:
    return NodeInfo({"metadata": {"name": name, "labels": {HOSTNAME: name, **labels}}})


class Informers:
    """The informer factory's `lister(resource)`, over indexers holding the given claims, volumes, classes."""

    def __init__(
        self,
        claims: Sequence[dict[str, Any]] = (),
        volumes: Sequence[dict[str, Any]] = (),
        classes: Sequence[dict[str, Any]] = (),
    ) -> None:
        self.listers: dict[Any, Lister] = {}
        for resource, objects in (
            (resources.PERSISTENT_VOLUME_CLAIMS, claims),
            (resources.PERSISTENT_VOLUMES, volumes),
            (STORAGE_CLASSES, classes),
        ):
            indexer = Indexer()
            for obj in objects:
                indexer.add(obj)
            self.listers[resource] = Lister(indexer, resource)

    def lister(self, resource: Any) -> Lister:
        """The other plugins of a profile ask for their listers too: they get empty ones."""
        return self.listers.setdefault(resource, Lister(Indexer(), resource))


def plugin(
    claims: Sequence[dict[str, Any]] = (),
    volumes: Sequence[dict[str, Any]] = (),
    classes: Sequence[dict[str, Any]] = (),
) -> VolumeBinding:
    return VolumeBinding({}, types.SimpleNamespace(informers=Informers(claims, volumes, classes)))  # type: ignore[arg-type]


def pre_filter(vb: VolumeBinding, p: dict[str, Any]) -> tuple[CycleState, Status | None]:
    state = CycleState()
    result, status = vb.pre_filter(state, p, [])
    assert result is None  # VolumeBinding never narrows the nodes (kube 1.32 dropped that)
    return state, status


def verdict(status: Status | None) -> tuple[Code, list[str]]:
    return (Code.SUCCESS, []) if status is None else (status.code, status.reasons)


# --- PreFilter ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case, p, claims, classes, expected",
    [
        ("a pod without volumes is skipped", pod(), [], [], (Code.SKIP, [])),
        (
            "a pod whose volumes use no claims is skipped",
            pod(PROJECTED_TOKEN, CONFIG),
            [],
            [],
            (Code.SKIP, []),
        ),
        (
            "a pod with a bound claim passes",
            pod(CONFIG, uses("data")),
            [claim(volume="pv-1")],
            [],
            (Code.SUCCESS, []),
        ),
        (
            "a missing claim turns the pod away",
            pod(uses("data")),
            [],
            [],
            (UNRESOLVABLE, ['persistentvolumeclaim "data" not found']),
        ),
        (
            "the first missing claim of several is named",
            pod(uses("data"), uses("logs", "logs")),
            [claim(volume="pv-1")],
            [],
            (UNRESOLVABLE, ['persistentvolumeclaim "logs" not found']),
        ),
        (
            "a claim of the same name in another namespace does not count",
            pod(uses("data")),
            [claim(volume="pv-1", namespace="other")],
            [],
            (UNRESOLVABLE, ['persistentvolumeclaim "data" not found']),
        ),
        (
            "a claim being deleted turns the pod away",
            pod(uses("data")),
            [claim(volume="pv-1", deleting=True)],
            [],
            (UNRESOLVABLE, ['persistentvolumeclaim "data" is being deleted']),
        ),
        (
            "a lost claim turns the pod away",
            pod(uses("data")),
            [claim(volume="pv-1", phase="Lost")],
            [],
            (UNRESOLVABLE, ['persistentvolumeclaim "data" bound to non-existent persistentvolume "pv-1"']),
        ),
        (
            "a lost claim being deleted is reported as lost, kube's first check",
            pod(uses("data")),
            [claim(volume="pv-1", phase="Lost", deleting=True)],
            [],
            (UNRESOLVABLE, ['persistentvolumeclaim "data" bound to non-existent persistentvolume "pv-1"']),
        ),
        (
            "an unbound claim without a class waits for the PV controller",
            pod(uses("data")),
            [claim()],
            [],
            (UNRESOLVABLE, [ERR_REASON_UNBOUND_IMMEDIATE]),
        ),
        (
            "an unbound claim of an Immediate class waits for the PV controller",
            pod(uses("data")),
            [claim(class_name="standard")],
            [storage_class("standard")],
            (UNRESOLVABLE, [ERR_REASON_UNBOUND_IMMEDIATE]),
        ),
        (
            "an unbound claim of a class that does not exist binds immediately",
            pod(uses("data")),
            [claim(class_name="gone")],
            [],
            (UNRESOLVABLE, [ERR_REASON_UNBOUND_IMMEDIATE]),
        ),
        (
            "a claim naming its volume before the binding completed is not bound yet",
            pod(uses("data")),
            [claim(volume="pv-1", bind_completed=False)],
            [],
            (UNRESOLVABLE, [ERR_REASON_UNBOUND_IMMEDIATE]),
        ),
        (
            "a pre-bound claim of a WaitForFirstConsumer class counts as immediate",
            pod(uses("data")),
            [claim(volume="pv-1", bind_completed=False, class_name="local")],
            [storage_class("local", "WaitForFirstConsumer")],
            (UNRESOLVABLE, [ERR_REASON_UNBOUND_IMMEDIATE]),
        ),
        (
            "an unbound WaitForFirstConsumer claim passes PreFilter (Filter refuses it)",
            pod(uses("data")),
            [claim(class_name="local")],
            [storage_class("local", "WaitForFirstConsumer")],
            (Code.SUCCESS, []),
        ),
        (
            "the beta class annotation wins over spec.storageClassName",
            pod(uses("data")),
            [claim(class_name="standard", annotations={"volume.beta.kubernetes.io/storage-class": "local"})],
            [storage_class("standard"), storage_class("local", "WaitForFirstConsumer")],
            (Code.SUCCESS, []),
        ),
        (
            "a class without a binding mode is an error",
            pod(uses("data")),
            [claim(class_name="old")],
            [storage_class("old", mode=None)],
            (Code.ERROR, ['VolumeBindingMode not set for StorageClass "old"']),
        ),
        (
            "an ephemeral volume's claim not created yet is waited for",
            pod(ephemeral()),
            [],
            [],
            (
                UNRESOLVABLE,
                ['waiting for ephemeral volume controller to create the persistentvolumeclaim "web-scratch"'],
            ),
        ),
        (
            "an ephemeral volume's claim made for another pod is refused",
            pod(ephemeral()),
            [claim("web-scratch", volume="pv-1", owner_uid="uid-someone-else")],
            [],
            (UNRESOLVABLE, [f"PVC {NS}/web-scratch was not created for pod {NS}/web (pod is not owner)"]),
        ),
        (
            "an ephemeral volume's claim without an owner is refused",
            pod(ephemeral()),
            [claim("web-scratch", volume="pv-1")],
            [],
            (UNRESOLVABLE, [f"PVC {NS}/web-scratch was not created for pod {NS}/web (pod is not owner)"]),
        ),
        (
            "an ephemeral volume's own bound claim passes",
            pod(ephemeral()),
            [claim("web-scratch", volume="pv-1", owner_uid="uid-web")],
            [],
            (Code.SUCCESS, []),
        ),
    ],
)
def test_pre_filter(
    case: str,
    p: dict[str, Any],
    claims: list[dict[str, Any]],
    classes: list[dict[str, Any]],
    expected: tuple[Code, list[str]],
) -> None:
    _, status = pre_filter(plugin(claims, [persistent_volume("pv-1")], classes), p)
    assert verdict(status) == expected, case


def test_a_pod_without_claims_costs_no_lister_reads() -> None:
    vb = plugin()
    vb.claim_lister = vb.volume_lister = vb.class_lister = None  # any read would raise
    assert verdict(pre_filter(vb, pod(PROJECTED_TOKEN, CONFIG))[1]) == (Code.SKIP, [])


# --- Filter -------------------------------------------------------------------------------------------------


PINNED_TO_A = persistent_volume("pv-a", on_hosts("node-a"))
PINNED_TO_B = persistent_volume("pv-b", on_hosts("node-b"))
ANYWHERE = persistent_volume("pv-any")


@pytest.mark.parametrize(
    "case, claims, volumes, on, expected",
    [
        (
            "a volume without node affinity fits every node",
            [claim(volume="pv-any")],
            [ANYWHERE],
            node("node-b"),
            (Code.SUCCESS, []),
        ),
        (
            "a volume pinned to a node fits that node",
            [claim(volume="pv-a")],
            [PINNED_TO_A],
            node("node-a"),
            (Code.SUCCESS, []),
        ),
        (
            "a volume pinned to another node is a conflict",
            [claim(volume="pv-a")],
            [PINNED_TO_A],
            node("node-b"),
            (UNRESOLVABLE, [ERR_REASON_NODE_CONFLICT]),
        ),
        (
            "any matching term of the volume's affinity will do",
            [claim(volume="pv-z")],
            [
                persistent_volume(
                    "pv-z",
                    on_hosts("node-a"),
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["east"]}]},
                )
            ],
            node("node-b", zone="east"),
            (Code.SUCCESS, []),
        ),
        (
            "a volume affinity on metadata.name is not checked: volumes match node labels alone",
            [claim(volume="pv-f")],
            [
                persistent_volume(
                    "pv-f",
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]},
                )
            ],
            node("node-b"),
            (Code.SUCCESS, []),
        ),
        (
            "a malformed volume affinity matches no node",
            [claim(volume="pv-m")],
            [
                persistent_volume(
                    "pv-m",
                    {"matchExpressions": [{"key": HOSTNAME, "operator": "Near", "values": ["node-a"]}]},
                )
            ],
            node("node-a"),
            (UNRESOLVABLE, [ERR_REASON_NODE_CONFLICT]),
        ),
        (
            "a bound volume that is gone makes every node unavailable",
            [claim(volume="pv-gone")],
            [],
            node("node-a"),
            (UNRESOLVABLE, [ERR_REASON_PV_NOT_EXIST]),
        ),
        (
            "the first failing claim decides: a conflict before a missing volume",
            [claim(volume="pv-b"), claim("logs", volume="pv-gone")],
            [PINNED_TO_B],
            node("node-a"),
            (UNRESOLVABLE, [ERR_REASON_NODE_CONFLICT]),
        ),
        (
            "the first failing claim decides: a missing volume before a conflict",
            [claim("logs", volume="pv-gone"), claim(volume="pv-b")],
            [PINNED_TO_B],
            node("node-a"),
            (UNRESOLVABLE, [ERR_REASON_PV_NOT_EXIST]),
        ),
        (
            "an unbound WaitForFirstConsumer claim is refused on every node, as mkpy cannot bind it",
            [claim(class_name="local")],
            [],
            node("node-a"),
            (UNRESOLVABLE, [ERR_REASON_BIND_CONFLICT]),
        ),
        (
            "a conflict and an unbindable claim are both reported, in kube's order",
            [claim(volume="pv-b"), claim("logs", class_name="local")],
            [PINNED_TO_B],
            node("node-a"),
            (UNRESOLVABLE, [ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT]),
        ),
        (
            "an unbindable claim and a missing volume are both reported, in kube's order",
            [claim(volume="pv-gone"), claim("logs", class_name="local")],
            [],
            node("node-a"),
            (UNRESOLVABLE, [ERR_REASON_BIND_CONFLICT, ERR_REASON_PV_NOT_EXIST]),
        ),
    ],
)
def test_filter(
    case: str,
    claims: list[dict[str, Any]],
    volumes: list[dict[str, Any]],
    on: NodeInfo,
    expected: tuple[Code, list[str]],
) -> None:
    vb = plugin(claims, volumes, [storage_class("local", "WaitForFirstConsumer")])
    p = pod(*(uses(c["metadata"]["name"], c["metadata"]["name"]) for c in claims))
    state, status = pre_filter(vb, p)
    assert status is None, case
    assert verdict(vb.filter(state, p, on)) == expected, case


def test_filter_without_pre_filter_state_is_an_error() -> None:
    status = plugin().filter(CycleState(), pod(uses("data")), node("node-a"))
    assert verdict(status) == (Code.ERROR, ['reading "VolumeBinding" from cycleState: not found'])


def test_the_pre_filter_state_survives_preemption_cloning_the_cycle_state() -> None:
    vb = plugin([claim(volume="pv-a")], [PINNED_TO_A])
    p = pod(uses("data"))
    state, _ = pre_filter(vb, p)
    clone = state.clone()
    assert verdict(vb.filter(clone, p, node("node-b"))) == (UNRESOLVABLE, [ERR_REASON_NODE_CONFLICT])


# --- requeueing ---------------------------------------------------------------------------------------------


def hint(resource: str) -> Any:
    registration = next(r for r in plugin().events_to_register() if r.event.resource == resource)
    return registration.hint


def test_the_plugin_registers_kubes_events() -> None:
    changed = ActionType.ADD | ActionType.UPDATE
    assert {(r.event.resource, r.event.action) for r in plugin().events_to_register()} == {
        ("StorageClass", changed),
        ("PersistentVolumeClaim", changed),
        ("PersistentVolume", changed),
        ("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    }


@pytest.mark.parametrize(
    "case, resource, p, old, new, expected",
    [
        (
            "a claim the pod uses was added",
            "PersistentVolumeClaim",
            pod(uses("data")),
            None,
            claim(),
            QueueingHint.QUEUE,
        ),
        (
            "a claim the pod uses was bound",
            "PersistentVolumeClaim",
            pod(uses("data")),
            claim(),
            claim(volume="pv-1"),
            QueueingHint.QUEUE,
        ),
        (
            "the claim of the pod's ephemeral volume was created",
            "PersistentVolumeClaim",
            pod(ephemeral()),
            None,
            claim("web-scratch"),
            QueueingHint.QUEUE,
        ),
        (
            "a claim the pod does not use changed",
            "PersistentVolumeClaim",
            pod(uses("data")),
            None,
            claim("other"),
            QueueingHint.SKIP,
        ),
        (
            "a claim of the same name in another namespace changed",
            "PersistentVolumeClaim",
            pod(uses("data")),
            None,
            claim(namespace="other"),
            QueueingHint.SKIP,
        ),
        (
            "a storage class was added",
            "StorageClass",
            pod(uses("data")),
            None,
            storage_class("fast"),
            QueueingHint.QUEUE,
        ),
        (
            "a storage class's allowed topologies changed",
            "StorageClass",
            pod(uses("data")),
            storage_class("fast"),
            storage_class(
                "fast", allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]
            ),
            QueueingHint.QUEUE,
        ),
        (
            "a storage class's labels changed",
            "StorageClass",
            pod(uses("data")),
            storage_class("fast"),
            {**storage_class("fast"), "metadata": {"name": "fast", "labels": {"tier": "gold"}}},
            QueueingHint.SKIP,
        ),
    ],
)
def test_queueing_hints(
    case: str, resource: str, p: dict[str, Any], old: Any, new: Any, expected: QueueingHint
) -> None:
    assert hint(resource)(p, old, new) is expected, case


class FakeInformer:
    def __init__(self) -> None:
        self.handlers: list[Any] = []

    def add_event_handler(self, handler: Any) -> None:
        self.handlers.append(handler)


class FakeInformerFactory:
    def __init__(self) -> None:
        self.informers: dict[str, FakeInformer] = {}

    def informer_for(self, resource: Any) -> FakeInformer:
        return self.informers.setdefault(resource.plural, FakeInformer())


class RecordingQueue:
    def __init__(self) -> None:
        self.events: list[tuple[str, Any, Any]] = []

    def move_all_to_active_or_backoff_queue(
        self, event: ClusterEvent, old: Any = None, new: Any = None
    ) -> None:
        self.events.append((event.label, old, new))


def test_the_scheduler_watches_claims_volumes_and_classes_for_the_actions_plugins_registered() -> None:
    factory, queue = FakeInformerFactory(), RecordingQueue()
    EventHandlers(None, queue, ["default-scheduler"]).register_cluster_events(
        factory, plugin().events_to_register()
    )
    assert sorted(factory.informers) == ["persistentvolumeclaims", "persistentvolumes", "storageclasses"]
    (claims,) = factory.informers["persistentvolumeclaims"].handlers
    old, new = claim(), claim(volume="pv-1")
    claims.on_add(old, True)
    claims.on_update(old, new)
    claims.on_delete(DeletedFinalStateUnknown(f"{NS}/data", new))  # deletes were not registered: ignored
    assert queue.events == [
        ("PersistentVolumeClaimAdd", None, old),
        ("PersistentVolumeClaimUpdate", old, new),
    ]


def test_kinds_no_plugin_registered_for_are_not_watched() -> None:
    factory = FakeInformerFactory()
    EventHandlers(None, RecordingQueue(), ["default-scheduler"]).register_cluster_events(factory, [])
    assert factory.informers == {}


async def test_a_pod_turned_away_for_its_claim_is_requeued_when_that_claim_is_bound() -> None:
    clock = FakeClock()
    queue = SchedulingQueue(
        lambda a, b: a.timestamp < b.timestamp,
        clock=clock,
        queueing_hints={"VolumeBinding": plugin().events_to_register()},
    )
    waiting = pod(uses("data"))
    queue.add(waiting)
    qpi = await queue.pop()
    assert qpi is not None
    qpi.unschedulable_plugins = {"VolumeBinding"}
    queue.add_unschedulable_if_not_present(qpi, queue.scheduling_cycle)
    handler = EventHandlers(None, queue, ["default-scheduler"])
    factory = FakeInformerFactory()
    handler.register_cluster_events(factory, plugin().events_to_register())
    (claims,) = factory.informers["persistentvolumeclaims"].handlers
    claims.on_update(claim("other"), claim("other", volume="pv-2"))
    assert f"{NS}/web" in queue._unschedulable
    claims.on_update(claim(), claim(volume="pv-1"))
    assert f"{NS}/web" not in queue._unschedulable


# --- in the default profile ---------------------------------------------------------------------------------


def test_the_default_profile_runs_volume_binding_at_pre_filter_and_filter() -> None:
    profile = config.default_configuration().profiles[0]
    points = [point for point, names in profile.plugins.items() if "VolumeBinding" in names]
    assert points == ["preFilter", "filter"]
    assert (
        profile.plugins["filter"].index("VolumeBinding")
        == profile.plugins["filter"].index("NodeResourcesFit") + 1
    )


def test_the_default_profile_turns_away_a_pod_with_an_unbound_claim() -> None:
    configuration = config.default_configuration()
    snapshot = Snapshot.of([], [{"metadata": {"name": "node-a"}, "status": {"allocatable": {"pods": "110"}}}])
    fw = Framework(
        configuration.profiles[0], configuration.registry, snapshot=snapshot, informers=Informers([claim()])
    )
    _, status, _ = fw.run_pre_filter_plugins(CycleState(), pod(uses("data")), snapshot.list())
    assert (status.code, status.reasons, status.plugin) == (
        UNRESOLVABLE,
        [ERR_REASON_UNBOUND_IMMEDIATE],
        "VolumeBinding",
    )
