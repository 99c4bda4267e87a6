"""The status manager: the one writer of this node's pod statuses to the API (kube's `kubelet/status`).

A pod worker computes its pod's status before and after each step of a sync and hands it over with
`set_pod_status`; it does not wait for the apiserver. The writer tasks send each pod's newest status as a
strategic-merge patch of `pods/<name>/status`, a few pods at once, each pod's statuses one at a time. A
status equal to the one before is dropped, and one replaced before a writer got to it is never sent: when
the apiserver is slower than the pods, a pod may go from Pending to Running in one write, as with kube's
status manager. A status is *pending* from the moment it is set until a write of it (or of a newer one)
succeeds; the pod as its pending status leaves it (`pod_with_status`) is what the next status is computed
from, and once nothing is pending the API's copy is again the reference, so what another component wrote
(the node lifecycle controller marking pods not ready) is seen and corrected.

    status = StatusManager(client, on_written)     # on_written(pod): the API's answer to a write
    status.set_pod_status(pod, computed)
    status.pod_with_status(pod)                    # pod, with the status still to be written if any
    await status.flush(uid, timeout)               # the newest status is written (before deleting a pod)
    status.forget(uid)                             # the pod is gone
    await status.run()                             # the writers, until cancelled

Usage rules: writes that fail for another reason than the pod being gone are tried again after
`RETRY_AFTER_ERROR` seconds; `flush` returns once nothing is pending for the pod (written, or the pod
gone), or after its timeout when the apiserver cannot be reached.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from minikube_py.client import errors as api_errors
from minikube_py.client import resources
from minikube_py.client.rest import RESTClient
from minikube_py.kubelet import podstatus

log = logging.getLogger("mkpy.kubelet.status")

RETRY_AFTER_ERROR = 1.0
# Pods whose statuses are written at once (one pod's are always written one at a time, in order). kube's
# status manager writes one at a time, to an apiserver that answers in milliseconds; ours answers a hundred
# simulated kubelets in hundreds of milliseconds, and one write at a time left a node's pods Running in the
# runtime for seconds before the API said so.
STATUS_WRITERS = 4


class StatusManager:
    def __init__(self, client: RESTClient, on_written: Callable[[dict[str, Any]], None]) -> None:
        self._client = client
        self._on_written = on_written
        self._pending: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}  # uid -> (pod, status to write)
        self._dirty: dict[str, None] = {}  # uids whose pending status no writer has taken yet, oldest first
        self._writing: set[str] = set()  # uids a writer is writing now
        self._wake = asyncio.Event()
        self._settled = asyncio.Condition()

    def set_pod_status(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        if not podstatus.status_changed(self.pod_with_status(pod).get("status") or {}, status):
            return
        self._pending[uid] = (pod, status)
        self._dirty[uid] = None
        self._wake.set()

    def pod_with_status(self, pod: dict[str, Any]) -> dict[str, Any]:
        pending = self._pending.get(pod["metadata"]["uid"])
        return pod if pending is None else {**pod, "status": pending[1]}

    async def flush(self, uid: str, timeout: float) -> bool:
        """Wait until nothing is pending for `uid`; False if that took longer than `timeout` seconds."""
        try:
            async with asyncio.timeout(timeout), self._settled:
                await self._settled.wait_for(lambda: uid not in self._pending)
        except TimeoutError:
            return False
        return True

    def forget(self, uid: str) -> None:
        self._pending.pop(uid, None)
        self._dirty.pop(uid, None)
        asyncio.get_running_loop().create_task(self._notify())

    async def run(self) -> None:
        """The writers, STATUS_WRITERS of them, each taking the oldest pending pod no other one is writing."""
        await asyncio.gather(*(self._writer() for _ in range(STATUS_WRITERS)))

    async def _writer(self) -> None:
        while True:
            uid = next((uid for uid in self._dirty if uid not in self._writing), None)
            if uid is None:
                self._wake.clear()
                await self._wake.wait()
                continue
            del self._dirty[uid]
            self._writing.add(uid)
            try:
                await self._write(uid, *self._pending[uid])
            finally:
                self._writing.discard(uid)
                if self._dirty:
                    self._wake.set()  # a newer status of this pod waited for this write to end
                await self._notify()

    async def _write(self, uid: str, pod: dict[str, Any], status: dict[str, Any]) -> None:
        meta = pod["metadata"]
        try:
            updated = await self._client.patch(resources.PODS, meta["name"], {"status": status},
                                               meta.get("namespace"), subresource="status")
        except api_errors.NotFound:
            self._done(uid, status)
            return
        except (api_errors.APIStatusError, OSError) as error:
            log.warning("updating the status of pod %s: %s", meta["name"], error)
            asyncio.get_running_loop().call_later(RETRY_AFTER_ERROR, self._retry, uid)
            return
        self._done(uid, status)
        self._on_written(updated)

    def _done(self, uid: str, status: dict[str, Any]) -> None:
        pending = self._pending.get(uid)
        if pending is not None and pending[1] is status:  # nothing newer was set while it was written
            del self._pending[uid]

    def _retry(self, uid: str) -> None:
        if uid in self._pending:
            self._dirty[uid] = None
            self._wake.set()

    async def _notify(self) -> None:
        async with self._settled:
            self._settled.notify_all()
