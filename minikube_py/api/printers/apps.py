"""Printers for apps/v1: Deployments, ReplicaSets, StatefulSets, DaemonSets and ControllerRevisions.

Deployments and StatefulSets show READY as `ready/desired`; ReplicaSets and DaemonSets show each count as
its own int column. The wide columns list the template's containers and images and the selector; a
Deployment's empty selector prints as an empty cell where the others print `<none>`, as in kube.
A ControllerRevision names its controller as `<kind>.<group>/<name>` (`statefulset.apps/web`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.errors import APIError
from minikube_py.api.printers.base import AGE, CONTAINERS, IMAGES, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import (
    age,
    container_cells,
    desired_replicas,
    format_label_selector,
    format_labels,
    object_name,
    selector_string,
    template_spec,
)


def _parts(obj: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    return object_name(obj), obj.get("spec") or {}, obj.get("status") or {}


def _deployment_selector(spec: dict[str, Any]) -> str:
    try:
        return selector_string(spec.get("selector"))
    except APIError:
        return "<invalid>"


def _deployment_cells(deployment: dict[str, Any], now: datetime) -> list[Cell]:
    name, spec, status = _parts(deployment)
    return [
        name, f"{status.get('readyReplicas', 0)}/{desired_replicas(spec)}", status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0), age(deployment, now), *container_cells(template_spec(deployment)),
        _deployment_selector(spec),
    ]


def _replica_set_cells(replica_set: dict[str, Any], now: datetime) -> list[Cell]:
    name, spec, status = _parts(replica_set)
    return [
        name, desired_replicas(spec), status.get("replicas", 0), status.get("readyReplicas", 0),
        age(replica_set, now), *container_cells(template_spec(replica_set)),
        format_label_selector(spec.get("selector")),
    ]


def _stateful_set_cells(stateful_set: dict[str, Any], now: datetime) -> list[Cell]:
    name, spec, status = _parts(stateful_set)
    return [
        name, f"{status.get('readyReplicas', 0)}/{desired_replicas(spec)}", age(stateful_set, now),
        *container_cells(template_spec(stateful_set)),
    ]


def _daemon_set_cells(daemon_set: dict[str, Any], now: datetime) -> list[Cell]:
    name, spec, status = _parts(daemon_set)
    counts = ("desiredNumberScheduled", "currentNumberScheduled", "numberReady", "updatedNumberScheduled",
              "numberAvailable")
    return [
        name, *(status.get(count, 0) for count in counts),
        format_labels(template_spec(daemon_set).get("nodeSelector")), age(daemon_set, now),
        *container_cells(template_spec(daemon_set)), format_label_selector(spec.get("selector")),
    ]


def controller_name(obj: dict[str, Any]) -> str:
    """The controlling owner as `<kind>.<group>/<name>` (no group for core kinds), `<none>` without one."""
    for owner in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller"):
            group = owner.get("apiVersion", "").rpartition("/")[0]
            kind = owner.get("kind", "")
            group_kind = f"{kind}.{group}" if group else kind
            return f"{group_kind.lower()}/{owner.get('name', '')}" if group_kind else owner.get("name", "")
    return "<none>"


def _controller_revision_cells(revision: dict[str, Any], now: datetime) -> list[Cell]:
    name = object_name(revision)
    return [name, controller_name(revision), revision.get("revision", 0), age(revision, now)]


_READY = Column("Ready", "Number of the pod with ready state")

DEPLOYMENT = Printer(
    (
        NAME,
        _READY,
        Column("Up-to-date", "Total number of non-terminated pods targeted by this deployment that have the "
                             "desired template spec."),
        Column("Available", "Total number of available pods (ready for at least minReadySeconds) targeted by "
                            "this deployment."),
        AGE,
        CONTAINERS,
        IMAGES,
        Column("Selector", "Label selector for pods. Existing ReplicaSets whose pods are selected by this "
                           "will be the ones affected by this deployment.", priority=1),
    ),
    _deployment_cells,
)

_REPLICAS_DOC = ("Replicas is the most recently observed number of replicas. More info: https://"
                 "kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/"
                 "#what-is-a-replicationcontroller")

REPLICA_SET = Printer(
    (
        NAME,
        Column("Desired", "Replicas is the number of desired replicas. This is a pointer to distinguish "
                          "between explicit zero and unspecified. Defaults to 1. More info: https://"
                          "kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/"
                          "#what-is-a-replicationcontroller",
               type="integer"),
        Column("Current", _REPLICAS_DOC, type="integer"),
        Column("Ready", "The number of ready replicas for this replica set.", type="integer"),
        AGE,
        CONTAINERS,
        IMAGES,
        Column("Selector", "Selector is a label query over pods that should match the replica count. If the "
                           "selector is empty, it is defaulted to the labels present on the pod template. "
                           "Label keys and values that must match in order to be controlled by this replica "
                           "set. More info: https://kubernetes.io/docs/concepts/overview/"
                           "working-with-objects/labels/#label-selectors", priority=1),
    ),
    _replica_set_cells,
)

STATEFUL_SET = Printer((NAME, _READY, AGE, CONTAINERS, IMAGES), _stateful_set_cells)

DAEMON_SET = Printer(
    (
        NAME,
        Column("Desired", "The total number of nodes that should be running the daemon pod (including nodes "
                          "correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/"
                          "workloads/controllers/daemonset/", type="integer"),
        Column("Current", "The number of nodes that are running at least 1 daemon pod and are supposed to "
                          "run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/"
                          "controllers/daemonset/", type="integer"),
        Column("Ready", "The number of nodes that should be running the daemon pod and have one or more of "
                        "the daemon pod running and ready.", type="integer"),
        Column("Up-to-date", "The total number of nodes that are running updated daemon pod", type="integer"),
        Column("Available", "The number of nodes that should be running the daemon pod and have one or more "
                            "of the daemon pod running and available (ready for at least "
                            "spec.minReadySeconds)",
               type="integer"),
        Column("Node Selector", "NodeSelector is a selector which must be true for the pod to fit on a node. "
                                "Selector which must match a node's labels for the pod to be scheduled on "
                                "that node. More info: "
                                "https://kubernetes.io/docs/concepts/configuration/assign-pod-node/"),
        AGE,
        CONTAINERS,
        IMAGES,
        Column("Selector", "A label query over pods that are managed by the daemon set. Must match in order "
                           "to be controlled. If empty, defaulted to labels on Pod template. More info: "
                           "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/"
                           "#label-selectors",
               priority=1),
    ),
    _daemon_set_cells,
)

CONTROLLER_REVISION = Printer(
    (
        NAME,
        Column("Controller", "Controller of the object"),
        Column("Revision", "revision indicates the revision of the state represented by Data."),
        AGE,
    ),
    _controller_revision_cells,
)

PRINTERS = {
    ("apps", "v1", "Deployment"): DEPLOYMENT,
    ("apps", "v1", "ReplicaSet"): REPLICA_SET,
    ("apps", "v1", "StatefulSet"): STATEFUL_SET,
    ("apps", "v1", "DaemonSet"): DAEMON_SET,
    ("apps", "v1", "ControllerRevision"): CONTROLLER_REVISION,
}
