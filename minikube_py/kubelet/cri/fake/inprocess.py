"""The fake runtime called in the kubelet's own process, without a gRPC channel (for simulated nodes).

A hundred simulated nodes in one process (`kubelet/hollow.py`) would spend most of their CPU inside gRPC:
a unary call between two `grpc.aio` ends of one process costs about 0.7 ms, and a pod's first sync makes a
dozen. `direct_stubs(runtime)` gives `RuntimeClient` stand-ins for the two generated gRPC stubs: each method
(`RunPodSandbox(request, timeout=...)`) hands the request to the same servicer the socket serves
(`service.py`) and returns its response, so the kubelet, the servicer and the runtime run exactly the code
they run over a socket. What stays of the wire:

* messages cross as bytes: each request and response is serialized and parsed again, so neither side
  shares (or sees changes to) the other's objects, and unset fields read as they would after a real call;
* a failure the servicer answers with `context.abort(code, details)` raises the `grpc.aio.AioRpcError` a
  channel raises, so `RuntimeClient` maps it as usual. There is no deadline to enforce: the fake's
  servicers answer at once, without ever suspending.

The socket is still served, for `mkpy crictl` and anything else that dials the node's runtime.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

import grpc
import grpc.aio

from minikube_py.kubelet.cri.fake.runtime import FakeRuntime
from minikube_py.kubelet.cri.fake.service import ImageService, RuntimeService


class _Context:
    """The part of `grpc.aio.ServicerContext` the fake servicers use."""

    async def abort(self, code: grpc.StatusCode, details: str = "", trailing_metadata: Any = ()) -> NoReturn:
        raise grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details=details)


class DirectStub:
    """Calls `servicer`'s methods as a generated stub calls them over a channel."""

    def __init__(self, servicer: Any) -> None:
        self._servicer = servicer

    def __getattr__(self, method: str) -> Callable[..., Awaitable[Any]]:
        handler = getattr(self._servicer, method)

        async def call(request: Any, timeout: float | None = None) -> Any:
            # No deadline to enforce: the fake's servicers answer without ever suspending.
            response = await handler(type(request).FromString(request.SerializeToString()), _Context())
            return type(response).FromString(response.SerializeToString())

        return call


def direct_stubs(runtime: FakeRuntime) -> tuple[DirectStub, DirectStub]:
    """(RuntimeService stub, ImageService stub) calling `runtime` in-process."""
    return DirectStub(RuntimeService(runtime)), DirectStub(ImageService(runtime))
