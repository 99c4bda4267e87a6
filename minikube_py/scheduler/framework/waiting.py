"""Pods held at Permit: a plugin said Wait, and the pod waits until every such plugin allows it, one rejects
it, or a plugin's timeout passes (kube's `waitingPodsMap`).

Where it sits: `Framework.run_permit_plugins` (end of the scheduling cycle) creates a `WaitingPod` and adds it
to the `WaitingPods` map shared by all profiles; the binding cycle awaits `Framework.wait_on_permit`, which
calls `WaitingPod.wait()`. Meanwhile any plugin can reach the pod through `Handle.get_waiting_pod(uid)` and
call `allow(plugin_name)` or `reject(plugin_name, message)` (a co-scheduling plugin allows a whole gang).

Usage rules:
* The first decision wins: once rejected (or allowed by the last pending plugin), later calls change nothing.
* Timeouts are measured on the injected clock from the moment the pod started waiting, and a timeout that
  has passed wins over an `allow` that arrives later, as kube's timers would have fired first.
* `allow`/`reject` never block and may be called before anyone awaits `wait()`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping

from minikube_py.api.gofmt import go_duration
from minikube_py.client.clock import Clock
from minikube_py.scheduler.framework.interface import Code, Pod, Status

MAX_TIMEOUT = 15 * 60.0  # seconds; longer Permit timeouts are cut to this


class WaitingPod:
    """One pod waiting at Permit, with a deadline per plugin that asked it to wait."""

    def __init__(self, pod: Pod, plugin_timeouts: Mapping[str, float], clock: Clock) -> None:
        self.pod = pod
        self._clock = clock
        self._timeouts = dict(plugin_timeouts)
        start = clock.now()
        self._deadlines = {plugin: start + timeout for plugin, timeout in plugin_timeouts.items()}
        self._result: Status | None = None
        self._decided = asyncio.Event()

    @property
    def uid(self) -> str:
        return (self.pod.get("metadata") or {}).get("uid", "")

    def get_pod(self) -> Pod:
        return self.pod

    def pending_plugins(self) -> list[str]:
        """The plugins that have not allowed the pod yet."""
        return list(self._deadlines)

    def allow(self, plugin: str) -> None:
        """`plugin` lets the pod go; the pod is allowed once no plugin is pending."""
        self._expire_timeouts()
        self._deadlines.pop(plugin, None)
        if not self._deadlines:
            self._decide(Status())

    def reject(self, plugin: str, message: str) -> None:
        """`plugin` refuses the pod: it becomes Unschedulable with `message`."""
        self._decide(Status(Code.UNSCHEDULABLE, [message], plugin=plugin))

    async def wait(self) -> Status:
        """Block until the pod is allowed, rejected or timed out, and say which."""
        while self._result is None:
            self._expire_timeouts()
            if self._result is not None:
                break
            delay = min(self._deadlines.values()) - self._clock.now()
            sleeper = asyncio.ensure_future(self._clock.sleep(delay))
            decided = asyncio.ensure_future(self._decided.wait())
            try:
                await asyncio.wait({sleeper, decided}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()
                decided.cancel()
        return self._result

    def _expire_timeouts(self) -> None:
        if self._result is not None or not self._deadlines:
            return
        now = self._clock.now()
        for plugin, deadline in sorted(self._deadlines.items(), key=lambda item: item[1]):
            if deadline <= now:
                waited = go_duration(self._timeouts[plugin])
                self.reject(plugin, f"rejected due to timeout after waiting {waited} at plugin {plugin}")
                return

    def _decide(self, status: Status) -> None:
        if self._result is None:
            self._result = status
            self._decided.set()


class WaitingPods:
    """The pods currently waiting at Permit, by UID; one map shared by every profile's framework."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, waiting_pod: WaitingPod) -> None:
        self._pods[waiting_pod.uid] = waiting_pod

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)
