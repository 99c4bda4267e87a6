"""Controllers run in the test's own process against a real apiserver, for integration tests.

    async with running(control_plane, DeploymentController, ReplicaSetController) as client:
        ...   # the controllers are working; `client` is an admin RESTClient

Each controller gets a `ControllerContext` as the controller manager builds it (a shared informer factory, an
event recorder writing to the apiserver), but under the admin identity and with the `settings` the test
chooses, so kube's long periods (pod GC every 20 s, a 50 s node grace period) can be made short. Polling
helpers for the asserting side live in tests/scheduler/cluster.py (`eventually`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from minikube_py.client.events import CoreEventRecorder, EventBroadcaster
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.context import ControllerContext, ControllerSettings
from tests.harness import ControlPlane


@contextlib.asynccontextmanager
async def running(control_plane: ControlPlane, *builders: Callable[[ControllerContext], Any],
                  settings: ControllerSettings | None = None, workers: int = 2) -> AsyncIterator[RESTClient]:
    def context(client: RESTClient, informers: SharedInformerFactory, recorder: CoreEventRecorder) -> ControllerContext:
        return ControllerContext(client=client, recorder=recorder, informers=informers,
                                 settings=settings or ControllerSettings())

    async with running_in(control_plane, context, builders, "kcm-test", workers) as client:
        yield client


@contextlib.asynccontextmanager
async def running_in(control_plane: ControlPlane, context: Callable[..., Any], builders: Iterable[Callable[[Any], Any]],
                     component: str, workers: int) -> AsyncIterator[RESTClient]:
    """Run the controllers `builders` make from `context(client, informers, recorder)` (the KCM's or the CCM's
    context) until the block ends; any controller that failed fails the test."""
    async with RESTClient(load_kubeconfig(str(control_plane.kubeconfig))) as client:
        informers = SharedInformerFactory(client)
        broadcaster = EventBroadcaster(client)
        broadcaster.start_recording_to_sink()
        ctx = context(client, informers, broadcaster.new_core_recorder(component))
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


async def wait_for(check: Callable[[], Any], timeout: float = 20.0, message: str = "the condition") -> Any:
    """Poll `check` (plain or async) until it returns something truthy; fail after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {message}")
        await asyncio.sleep(0.1)
