"""Cloud controllers run in the test's own process against a real apiserver and a given cloud provider.

    async with running(control_plane, cloud, CloudNodeController, settings=CloudSettings(...)) as client:
        ...   # the controllers are working; `client` is an admin RESTClient

The CCM twin of tests/kcm/running.py: each controller gets a `CloudControllerContext` as `mkpy ccm` builds it,
under the admin identity, with the test's cloud provider (usually `FakeCloud`) and short periods.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from minikube_py.ccm.cloud.interface import Interface
from minikube_py.ccm.context import CloudControllerContext, CloudSettings
from minikube_py.client.events import EventBroadcaster
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.rest import RESTClient
from tests.harness import ControlPlane
from tests.kcm.running import wait_for  # noqa: F401 - re-exported for the ccm tests


@contextlib.asynccontextmanager
async def running(control_plane: ControlPlane, cloud: Interface, *builders: Callable[[CloudControllerContext], Any],
                  settings: CloudSettings | None = None, workers: int = 1) -> AsyncIterator[RESTClient]:
    async with RESTClient(load_kubeconfig(str(control_plane.kubeconfig))) as client:
        informers = SharedInformerFactory(client)
        broadcaster = EventBroadcaster(client)
        broadcaster.start_recording_to_sink()
        ctx = CloudControllerContext(client=client, recorder=broadcaster.new_core_recorder("cloud-controller-manager"),
                                     informers=informers, cloud=cloud, settings=settings or CloudSettings())
        controllers = [build(ctx) for build in builders]
        informers.start()
        tasks = [asyncio.create_task(controller.run(workers)) for controller in controllers]
        try:
            yield client
        finally:
            for task in tasks:
                task.cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            await informers.stop()
            await broadcaster.shutdown()
            failures = [r for r in results if isinstance(r, Exception) and not isinstance(r, asyncio.CancelledError)]
            assert not failures, f"a controller failed: {failures!r}"
