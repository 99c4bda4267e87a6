"""The WebSocket channel protocol of exec, attach and port-forward (`v4.channel.k8s.io`, `v5.channel.k8s.io`).

Every binary WebSocket message carries one channel byte, then the payload. For exec and attach the
channels are fixed:

    0 stdin (client → server)      3 error: a metav1.Status that ends the command (server → client)
    1 stdout (server → client)     4 resize: `{"Width":W,"Height":H}` (client → server, tty only)
    2 stderr (server → client)   255 close (v5 only): `[255, n]` says the client has closed channel n

v4 has no way to say "stdin is finished", which is why v5 added channel 255 (kubectl 1.32 offers only v5;
the Python client offers v5 and v4). The same channel numbers name the streams everywhere in this package,
whatever the transport: a SPDY stream of type `stdout` is channel 1 too (see remotecommand.py).

The Status on channel 3 is how the exit code travels: success is `{"status": "Success"}`; a non-zero
exit is a Failure with reason `NonZeroExitCode` and a cause `ExitCode` whose message is the code, which
kubectl turns back into its own exit code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

V4 = "v4.channel.k8s.io"
V5 = "v5.channel.k8s.io"
PORT_FORWARD = "portforward.k8s.io"  # the SPDY port-forward protocol
SPDY_PORT_FORWARD = "SPDY/3.1+portforward.k8s.io"  # kubectl's SPDY-inside-WebSocket port-forward tunnel

STDIN, STDOUT, STDERR, ERROR, RESIZE = 0, 1, 2, 3, 4
CLOSE = 255
NAMES = {STDIN: "stdin", STDOUT: "stdout", STDERR: "stderr", ERROR: "error", RESIZE: "resize"}


def encode(channel: int, data: bytes) -> bytes:
    """One WebSocket message: the channel byte, then `data`."""
    return bytes([channel]) + data


def decode(message: bytes) -> tuple[int, bytes]:
    """(channel, payload) of one WebSocket message. Raises ValueError for an empty message."""
    if not message:
        raise ValueError("empty channel message: no channel byte")
    return message[0], message[1:]


def negotiate(offered: list[str], supported: list[str]) -> str | None:
    """The first protocol the client offered that we support (kube's handshake order), or None."""
    return next((protocol for protocol in offered if protocol in supported), None)


# statuses on the error channel ---------------------------------------------------------------------------


def success_status() -> dict[str, Any]:
    return {"metadata": {}, "status": "Success"}


def exit_code_status(code: int) -> dict[str, Any]:
    """The Status a command that exited with `code` ends with (success for 0)."""
    if code == 0:
        return success_status()
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: exit status {code}",
            "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


def failure_status(message: str, reason: str = "InternalError", code: int = 500) -> dict[str, Any]:
    """Any other failure (the runtime could not be reached, the container is gone, ...)."""
    return {"metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


def status_bytes(status: dict[str, Any]) -> bytes:
    return json.dumps(status, separators=(",", ":")).encode()


def exit_code(status: dict[str, Any]) -> int | None:
    """The exit code a Status reports: 0 for success, the `ExitCode` cause, or None for another failure."""
    if status.get("status") == "Success":
        return 0
    for cause in status.get("details", {}).get("causes", []):
        if cause.get("reason") == "ExitCode":
            return int(cause.get("message", "1"))
    return None


# terminal size -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TerminalSize:
    width: int
    height: int

    def encode(self) -> bytes:
        return json.dumps({"Width": self.width, "Height": self.height}).encode()


def parse_sizes(data: bytes) -> tuple[list[TerminalSize], bytes]:
    """The complete resize events at the start of `data` (flat JSON objects, one after another, as SPDY's
    resize stream carries them) and the incomplete rest. Raises ValueError for malformed JSON."""
    sizes = []
    while (end := data.find(b"}")) >= 0:
        event, data = data[:end + 1], data[end + 1:]
        try:
            obj = json.loads(event)
        except ValueError:
            raise ValueError(f"malformed resize event: {event!r}") from None
        if not isinstance(obj, dict):
            raise ValueError(f"malformed resize event: {event!r}")
        sizes.append(TerminalSize(int(obj.get("Width", 0)), int(obj.get("Height", 0))))
    return sizes, data
