"""Errors from CRI calls, as exceptions the kubelet can tell apart.

A runtime answers a failed call with a gRPC status code and a message. `RuntimeClient` turns every
`grpc.aio.AioRpcError` into a `CRIError` through `from_rpc_error`, picking a subclass by code, so callers
write `except CRINotFound:` (a container that is already gone) or `except CRIUnavailable:` (the runtime is
down: the node's Ready condition should say so) instead of comparing status codes.

    try:
        await runtime.remove_container(container_id)
    except CRINotFound:
        pass  # already removed
"""

from __future__ import annotations

import grpc


class CRIError(Exception):
    """A CRI call failed; `code` is the gRPC status code, `message` the runtime's explanation."""

    def __init__(self, method: str, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{method}: {message}")
        self.method = method
        self.code = code
        self.message = message


class CRINotFound(CRIError):
    """The sandbox, container or image named in the call does not exist (NOT_FOUND)."""


class CRIUnavailable(CRIError):
    """The runtime cannot be reached: not started, crashed, or the socket path is wrong (UNAVAILABLE)."""


class CRIUnimplemented(CRIError):
    """The runtime does not implement this call (UNIMPLEMENTED), e.g. an older containerd."""


class CRIDeadlineExceeded(CRIError):
    """The call took longer than the client's timeout (DEADLINE_EXCEEDED)."""


_BY_CODE: dict[grpc.StatusCode, type[CRIError]] = {
    grpc.StatusCode.NOT_FOUND: CRINotFound,
    grpc.StatusCode.UNAVAILABLE: CRIUnavailable,
    grpc.StatusCode.UNIMPLEMENTED: CRIUnimplemented,
    grpc.StatusCode.DEADLINE_EXCEEDED: CRIDeadlineExceeded,
}


def from_rpc_error(method: str, error: grpc.aio.AioRpcError, endpoint: str) -> CRIError:
    """The `CRIError` for a failed call of `method` (e.g. "RemoveContainer") against `endpoint`."""
    code = error.code()
    message = error.details() or code.name
    if code is grpc.StatusCode.UNAVAILABLE:
        # gRPC's own text ("failed to connect to all addresses; ...") does not say which runtime.
        message = f"container runtime at {endpoint} is not reachable ({message})"
    return _BY_CODE.get(code, CRIError)(method, code, message)
