"""What a cloud controller is built from: the CCM's client and recorder, the shared informers, the cloud
provider, and the settings its flags give.

Unlike the kube-controller-manager's controllers, which act as one ServiceAccount each, every controller of
the CCM acts as the CCM's own identity, `system:cloud-controller-manager` (kube's default without
`--use-service-account-credentials`): one client, one ClusterRole with exactly what the four controllers need.

Every call into the provider goes through `cloud_call`, which bounds it with `settings.cloud_call_timeout`:
a provider that hangs becomes a `CloudCallTimeout` the controller reports and retries, never a stuck worker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TypeVar

from minikube_py.ccm.cloud.interface import CloudProviderError, Interface
from minikube_py.client.clock import Clock, RealClock
from minikube_py.client.events import CoreEventRecorder
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.rest import RESTClient

T = TypeVar("T")


@dataclass(frozen=True)
class CloudSettings:
    """The CCM's flags that tune its controllers (kube's CloudControllerManagerConfiguration)."""

    cluster_name: str = "kubernetes"  # passed to the provider to tell this cluster's resources (--cluster-name)
    node_monitor_period: float = 5.0  # seconds between cloud-node-lifecycle passes (--node-monitor-period)
    node_status_update_frequency: float = 300.0  # seconds between address refreshes of initialized nodes
    node_sync_period: float = 100.0  # seconds between full load-balancer host resyncs (--node-sync-period)
    configure_cloud_routes: bool = False  # run the route controller's work (--configure-cloud-routes)
    route_reconciliation_period: float = 10.0  # seconds between route passes (--route-reconciliation-period)
    cluster_cidr: str = ""  # the pod range routes are kept for (--cluster-cidr)
    cloud_call_timeout: float = 30.0  # seconds one provider call may take (an mkpy flag: kube relies on contexts)


class CloudCallTimeout(CloudProviderError):
    """A provider call did not answer within `cloud_call_timeout`."""


async def cloud_call(call: Awaitable[T], timeout: float, what: str) -> T:
    """Await a provider call, turning a hang into `CloudCallTimeout` (the call is cancelled)."""
    try:
        async with asyncio.timeout(timeout):
            return await call
    except TimeoutError:
        raise CloudCallTimeout(f"{what}: the cloud provider did not answer within {timeout:g}s") from None


@dataclass
class CloudControllerContext:
    client: RESTClient
    recorder: CoreEventRecorder
    informers: SharedInformerFactory
    cloud: Interface
    settings: CloudSettings = field(default_factory=CloudSettings)
    clock: Clock = field(default_factory=RealClock)
