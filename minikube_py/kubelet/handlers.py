"""The three ways the kubelet acts on a running container from outside: exec a command, GET a URL, open a TCP
connection (kube's `lifecycle/handlers.go` and `prober/prober.go` share them), plus the `sleep` hook.

    outcome = await run_action(runtime, action, container_id, pod_ip, container, timeout)
    outcome.success, outcome.output

Used for lifecycle hooks (`postStart`, `preStop`: `run_hook`) and by the prober (liveness, readiness and
startup probes). Semantics as in kube: exec succeeds on exit code 0; httpGet on a status from 200 to 399
(to `host` or the pod's IP, the port given by number or by the container port's name); tcpSocket when the
connection opens. Every action is bounded by `timeout` seconds.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.cri.errors import CRIError


@dataclass
class Outcome:
    success: bool
    output: str  # what the action said: the command's output, the HTTP body, or why it failed
    exit_code: int | None = None  # an exec's exit code


async def run_action(runtime: RuntimeClient, action: dict[str, Any], container_id: str, pod_ip: str,
                     container: dict[str, Any] | None, timeout: float) -> Outcome:
    if "exec" in action:
        command = list((action["exec"] or {}).get("command") or [])
        try:
            response = await runtime.exec_sync(container_id, command, max(1, int(timeout)))
        except CRIError as error:
            return Outcome(False, error.message)
        output = (response.stdout + response.stderr).decode(errors="replace")
        return Outcome(response.exit_code == 0, output, response.exit_code)
    if "httpGet" in action:
        return await _http_get(action["httpGet"], pod_ip, container, timeout)
    if "tcpSocket" in action:
        spec = action["tcpSocket"]
        host, port = spec.get("host") or pod_ip, resolve_port(spec.get("port"), container)
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        except (OSError, TimeoutError) as error:
            return Outcome(False, f"dial tcp {host}:{port}: {_reason(error)}")
        writer.close()
        return Outcome(True, "")
    if "sleep" in action:
        await asyncio.sleep(min(float((action["sleep"] or {}).get("seconds", 0)), timeout))
        return Outcome(True, "")
    return Outcome(False, "the handler names no action (exec, httpGet, tcpSocket or sleep)")


async def run_hook(runtime: RuntimeClient, hook: dict[str, Any], container_id: str, pod_ip: str,
                   container: dict[str, Any] | None, timeout: float) -> str | None:
    """Run a postStart/preStop hook; None on success, else the message of the FailedPostStartHook/
    FailedPreStopHook event."""
    outcome = await run_action(runtime, hook, container_id, pod_ip, container, timeout)
    if outcome.success:
        return None
    kind = "Exec" if "exec" in hook else "HTTP" if "httpGet" in hook else "TCP" if "tcpSocket" in hook else "Sleep"
    if outcome.exit_code is not None:
        command = " ".join((hook["exec"] or {}).get("command") or [])
        return f"{kind} lifecycle hook failed: command {command!r} exited with {outcome.exit_code}: " \
               f"{outcome.output.strip()}"
    return f"{kind} lifecycle hook failed: {outcome.output.strip()}"


def resolve_port(port: Any, container: dict[str, Any] | None) -> int:
    """A probe's or hook's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int):
        return port
    if isinstance(port, str) and port.isdigit():
        return int(port)
    for declared in (container or {}).get("ports") or []:
        if declared.get("name") == port:
            return int(declared.get("containerPort", 0))
    return 0


async def _http_get(spec: dict[str, Any], pod_ip: str, container: dict[str, Any] | None,
                    timeout: float) -> Outcome:
    scheme = (spec.get("scheme") or "HTTP").lower()
    host = spec.get("host") or pod_ip
    port = resolve_port(spec.get("port"), container)
    path = spec.get("path") or "/"
    if not path.startswith("/"):
        path = "/" + path
    url = f"{scheme}://{host}:{port}{path}"
    headers = {"User-Agent": "kube-probe/1.32", "Accept": "*/*"}
    headers |= {h.get("name", ""): h.get("value", "") for h in spec.get("httpHeaders") or []}
    try:
        async with httpx.AsyncClient(verify=False, timeout=timeout, follow_redirects=True) as client:
            response = await client.get(url, headers=headers)
    except httpx.ConnectError as error:
        return Outcome(False, f'Get "{url}": dial tcp {host}:{port}: {_reason(error)}')
    except (httpx.HTTPError, OSError) as error:
        return Outcome(False, f'Get "{url}": {_reason(error)}')
    body = response.text[:1024]
    if 200 <= response.status_code < 400:
        return Outcome(True, body)
    return Outcome(False, f"HTTP probe failed with statuscode: {response.status_code}")


def _reason(error: BaseException) -> str:
    cause: BaseException | None = error
    while cause is not None:  # httpx wraps the OSError that says why
        if isinstance(cause, TimeoutError | httpx.TimeoutException):
            return "i/o timeout"
        if isinstance(cause, ConnectionRefusedError):
            return "connect: connection refused"
        cause = cause.__cause__ or cause.__context__
    return str(error) or type(error).__name__
