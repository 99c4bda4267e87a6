"""The controllers of mkpy's cloud-controller-manager, one per module, and the table that lists them.

`descriptors()` is the one place a controller joins the CCM, with kube's `--controllers` names and aliases. The
descriptor type and `--controllers` parsing are shared with the KCM (client/controllermanager.py); the CCM's controllers all act as
the CCM's own identity, so `service_account` is empty, and each names the `source.component` of its events as
kube's cloud controller does.
"""

from __future__ import annotations

from minikube_py.ccm.controllers.node import CloudNodeController
from minikube_py.ccm.controllers.nodelifecycle import CloudNodeLifecycleController
from minikube_py.ccm.controllers.route import RouteController
from minikube_py.ccm.controllers.service import ServiceController
from minikube_py.client.controllermanager import ControllerDescriptor


def descriptors() -> list[ControllerDescriptor]:
    return [
        ControllerDescriptor("cloud-node-controller", "", CloudNodeController, aliases=("cloud-node",),
                             workers_flag="node", default_workers=1, event_source="cloud-node-controller"),
        ControllerDescriptor("cloud-node-lifecycle-controller", "", CloudNodeLifecycleController,
                             aliases=("cloud-node-lifecycle",), event_source="cloud-node-lifecycle-controller"),
        ControllerDescriptor("service-lb-controller", "", ServiceController, aliases=("service",),
                             workers_flag="service", default_workers=1, event_source="service-controller"),
        ControllerDescriptor("node-route-controller", "", RouteController, aliases=("route",),
                             event_source="route_controller"),
    ]
