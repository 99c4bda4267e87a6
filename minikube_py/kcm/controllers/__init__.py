"""The controllers of mkpy's controller manager, one per module, and the table that lists them.

`descriptors()` is the one place a controller joins the manager (kube's `NewControllerDescriptors`): its
canonical name, the aliases `--controllers` accepts, the ServiceAccount it acts as, and how to build it.
"""

from __future__ import annotations

from minikube_py.client.controllermanager import ControllerDescriptor
from minikube_py.kcm.controllers.cronjob import CronJobController
from minikube_py.kcm.controllers.daemonset import DaemonSetController
from minikube_py.kcm.controllers.deployment import DeploymentController
from minikube_py.kcm.controllers.disruption import DisruptionController
from minikube_py.kcm.controllers.endpoints import EndpointsController
from minikube_py.kcm.controllers.endpointslice import EndpointSliceController
from minikube_py.kcm.controllers.garbagecollector import GarbageCollector
from minikube_py.kcm.controllers.job import JobController
from minikube_py.kcm.controllers.namespace import NamespaceController
from minikube_py.kcm.controllers.nodeipam import NodeIpamController
from minikube_py.kcm.controllers.nodelifecycle import NodeLifecycleController
from minikube_py.kcm.controllers.podautoscaler import HorizontalController
from minikube_py.kcm.controllers.podgc import PodGCController
from minikube_py.kcm.controllers.replicaset import REPLICATION_CONTROLLER, ReplicaSetController
from minikube_py.kcm.controllers.resourcequota import ResourceQuotaController
from minikube_py.kcm.controllers.rootcacertpublisher import RootCACertPublisher
from minikube_py.kcm.controllers.serviceaccount import ServiceAccountsController
from minikube_py.kcm.controllers.statefulset import StatefulSetController
from minikube_py.kcm.controllers.tainteviction import TaintEvictionController
from minikube_py.kcm.controllers.ttlafterfinished import TTLAfterFinishedController
from minikube_py.kcm.controllers.volume import (
    PersistentVolumeController,
    PVCProtectionController,
    PVProtectionController,
)


def descriptors() -> list[ControllerDescriptor]:
    return [
        ControllerDescriptor("serviceaccount-controller", "service-account-controller", ServiceAccountsController,
                             aliases=("serviceaccount",)),
        ControllerDescriptor("root-ca-certificate-publisher-controller", "root-ca-cert-publisher", RootCACertPublisher,
                             aliases=("root-ca-cert-publisher",)),
        ControllerDescriptor("namespace-controller", "namespace-controller", NamespaceController,
                             aliases=("namespace",), workers_flag="namespace", default_workers=10),
        ControllerDescriptor("resourcequota-controller", "resourcequota-controller", ResourceQuotaController,
                             aliases=("resourcequota",), workers_flag="resource-quota", default_workers=5),
        ControllerDescriptor("deployment-controller", "deployment-controller", DeploymentController,
                             aliases=("deployment",), workers_flag="deployment", default_workers=5),
        ControllerDescriptor("replicaset-controller", "replicaset-controller", ReplicaSetController,
                             aliases=("replicaset",), workers_flag="replicaset", default_workers=5),
        ControllerDescriptor("replicationcontroller-controller", "replication-controller",
                             lambda ctx: ReplicaSetController(ctx, REPLICATION_CONTROLLER),
                             aliases=("replicationcontroller",), workers_flag="rc", default_workers=5),
        ControllerDescriptor("endpoints-controller", "endpoint-controller", EndpointsController,
                             aliases=("endpoint",), workers_flag="endpoint", default_workers=5),
        ControllerDescriptor("endpointslice-controller", "endpointslice-controller", EndpointSliceController,
                             aliases=("endpointslice",), workers_flag="service-endpoint", default_workers=5,
                             event_source="endpoint-slice-controller"),
        ControllerDescriptor("pod-garbage-collector-controller", "pod-garbage-collector", PodGCController,
                             aliases=("podgc",)),
        ControllerDescriptor("garbage-collector-controller", "generic-garbage-collector", GarbageCollector,
                             aliases=("garbagecollector",), workers_flag="gc", default_workers=20,
                             event_source="garbage-collector-controller"),
        ControllerDescriptor("disruption-controller", "disruption-controller", DisruptionController,
                             aliases=("disruption",), event_source="controllermanager"),
        ControllerDescriptor("horizontal-pod-autoscaler-controller", "horizontal-pod-autoscaler", HorizontalController,
                             aliases=("horizontalpodautoscaling",), workers_flag="horizontal-pod-autoscaler",
                             default_workers=5),
        ControllerDescriptor("statefulset-controller", "statefulset-controller", StatefulSetController,
                             aliases=("statefulset",), workers_flag="statefulset", default_workers=5),
        ControllerDescriptor("daemonset-controller", "daemon-set-controller", DaemonSetController,
                             aliases=("daemonset",), workers_flag="daemonset", default_workers=2,
                             event_source="daemonset-controller"),
        ControllerDescriptor("job-controller", "job-controller", JobController, aliases=("job",),
                             workers_flag="job", default_workers=5),
        ControllerDescriptor("cronjob-controller", "cronjob-controller", CronJobController, aliases=("cronjob",),
                             workers_flag="cron-job", default_workers=5),
        ControllerDescriptor("ttl-after-finished-controller", "ttl-after-finished-controller",
                             TTLAfterFinishedController, aliases=("ttl-after-finished",),
                             workers_flag="ttl-after-finished", default_workers=5),
        ControllerDescriptor("node-ipam-controller", "node-controller", NodeIpamController, aliases=("nodeipam",),
                             event_source="cidrAllocator"),
        ControllerDescriptor("node-lifecycle-controller", "node-controller", NodeLifecycleController,
                             aliases=("nodelifecycle",)),
        ControllerDescriptor("taint-eviction-controller", "node-controller", TaintEvictionController,
                             event_source="taint-eviction-controller"),
        ControllerDescriptor("persistentvolume-binder-controller", "persistent-volume-binder",
                             PersistentVolumeController, aliases=("persistentvolume-binder",),
                             event_source="persistentvolume-controller"),
        ControllerDescriptor("persistentvolumeclaim-protection-controller", "pvc-protection-controller",
                             PVCProtectionController, aliases=("pvc-protection",)),
        ControllerDescriptor("persistentvolume-protection-controller", "pv-protection-controller",
                             PVProtectionController, aliases=("pv-protection",)),
    ]
