"""Test doubles for cloud controller unit tests: a CloudControllerContext over a recording client and the
fake cloud provider, with informer caches filled by hand (see tests/kcm/fakes.py for the client)."""

from __future__ import annotations

from minikube_py.ccm.cloud.fake import FakeCloud
from minikube_py.ccm.context import CloudControllerContext, CloudSettings
from minikube_py.client.clock import FakeClock
from minikube_py.client.events import EventBroadcaster
from minikube_py.client.informer import SharedInformerFactory
from tests.kcm.fakes import RecordingClient, cache  # noqa: F401 - re-exported for the ccm tests


def context(settings: CloudSettings | None = None,
            cloud: FakeCloud | None = None) -> tuple[CloudControllerContext, RecordingClient, FakeCloud, FakeClock]:
    client = RecordingClient()
    clock = FakeClock()
    cloud = cloud or FakeCloud()
    recorder = EventBroadcaster(client, clock).new_core_recorder("cloud-controller-manager")  # type: ignore[arg-type]
    ctx = CloudControllerContext(client=client, recorder=recorder,  # type: ignore[arg-type]
                                 informers=SharedInformerFactory(client),  # type: ignore[arg-type]
                                 cloud=cloud, settings=settings or CloudSettings(), clock=clock)
    return ctx, client, cloud, clock
