"""The controllers of mkpy's cloud-controller-manager, one per module, and the table that lists them.

`descriptors()` is the one place a controller joins the CCM, with kube's `--controllers` names and aliases. The
descriptor type and `--controllers` parsing are shared with the KCM (client/controllermanager.py); the CCM's controllers all act as
the CCM's own identity, so `service_account` is empty.
"""

from __future__ import annotations

from minikube_py.ccm.controllers.node import CloudNodeController
from minikube_py.ccm.controllers.nodelifecycle import CloudNodeLifecycleController
from minikube_py.ccm.controllers.route import RouteController
from minikube_py.ccm.controllers.service import ServiceController
from minikube_py.client.controllermanager import ControllerDescriptor

# The `source.component` of each controller's events, as kube's cloud controllers name themselves
EVENT_COMPONENTS = {
    "cloud-node-controller": "cloud-node-controller",
    "cloud-node-lifecycle-controller": "cloud-node-lifecycle-controller",
    "service-lb-controller": "service-controller",
    "node-route-controller": "route_controller",
}


def descriptors() -> list[ControllerDescriptor]:
    return [
        ControllerDescriptor("cloud-node-controller", "", CloudNodeController, aliases=("cloud-node",),
                             workers_flag="node", default_workers=1),
        ControllerDescriptor("cloud-node-lifecycle-controller", "", CloudNodeLifecycleController,
                             aliases=("cloud-node-lifecycle",)),
        ControllerDescriptor("service-lb-controller", "", ServiceController, aliases=("service",),
                             workers_flag="service", default_workers=1),
        ControllerDescriptor("node-route-controller", "", RouteController, aliases=("route",)),
    ]
