"""Cloud controllers run in the test's own process against a real apiserver and a given cloud provider.

    async with running(control_plane, cloud, CloudNodeController, settings=CloudSettings(...)) as client:
        ...   # the controllers are working; `client` is an admin RESTClient

The CCM twin of tests/kcm/running.py: each controller gets a `CloudControllerContext` as `mkpy ccm` builds it,
under the admin identity, with the test's cloud provider (usually `FakeCloud`) and short periods.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from minikube_py.ccm.cloud.interface import Interface
from minikube_py.ccm.context import CloudControllerContext, CloudSettings
from minikube_py.client.events import CoreEventRecorder
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.rest import RESTClient
from tests.harness import ControlPlane
from tests.kcm.running import running_in, wait_for  # noqa: F401 - wait_for re-exported for the ccm tests


@contextlib.asynccontextmanager
async def running(control_plane: ControlPlane, cloud: Interface, *builders: Callable[[CloudControllerContext], Any],
                  settings: CloudSettings | None = None, workers: int = 1) -> AsyncIterator[RESTClient]:
    def context(client: RESTClient, informers: SharedInformerFactory,
                recorder: CoreEventRecorder) -> CloudControllerContext:
        return CloudControllerContext(client=client, recorder=recorder, informers=informers, cloud=cloud,
                                      settings=settings or CloudSettings())

    async with running_in(control_plane, context, builders, "cloud-controller-manager", workers) as client:
        yield client
