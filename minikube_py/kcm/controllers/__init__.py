"""The controllers of mkpy's controller manager, one per module, and the table that lists them.

`descriptors()` is the one place a controller joins the manager (kube's `NewControllerDescriptors`): its
canonical name, the aliases `--controllers` accepts, the ServiceAccount it acts as, and how to build it.
"""

from __future__ import annotations

from minikube_py.kcm.controllers.podgc import PodGCController
from minikube_py.kcm.controllers.replicaset import REPLICATION_CONTROLLER, ReplicaSetController
from minikube_py.kcm.registry import ControllerDescriptor


def descriptors() -> list[ControllerDescriptor]:
    return [
        ControllerDescriptor("replicaset-controller", "replicaset-controller", ReplicaSetController,
                             aliases=("replicaset",), workers_flag="replicaset", default_workers=5),
        ControllerDescriptor("replicationcontroller-controller", "replication-controller",
                             lambda ctx: ReplicaSetController(ctx, REPLICATION_CONTROLLER),
                             aliases=("replicationcontroller",), workers_flag="rc", default_workers=5),
        ControllerDescriptor("pod-garbage-collector-controller", "pod-garbage-collector", PodGCController,
                             aliases=("podgc",)),
    ]
