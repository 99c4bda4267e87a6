"""One worker per pod (kube's `pod_workers.go`): the pod's syncs run one at a time, in order, and a pod that is
changed ten times while a sync runs is synced once more afterwards, with its latest spec.

    workers = PodWorkers(sync)            sync(uid) -> SyncOutcome (run again in N s? is the pod finished?)
    workers.update(uid)                   something changed (API event, runtime event, probe result)
    workers.update_after(uid, seconds)    a back-off ends then

A worker lives from the first update of its pod until `sync` says the pod is finished (terminated, cleaned
up, removed from the API); an update after that starts a fresh worker.

Usage rules: `sync` must not raise (an exception is logged and retried after `RETRY_AFTER_ERROR`);
`stop()` cancels every worker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

log = logging.getLogger("mkpy.kubelet.podworkers")

RETRY_AFTER_ERROR = 2.0


@dataclass
class SyncOutcome:
    finished: bool = False
    retry_in: float | None = None


class _Worker:
    def __init__(self) -> None:
        self.dirty = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.timer: asyncio.TimerHandle | None = None


class PodWorkers:
    def __init__(self, sync: Callable[[str], Awaitable[SyncOutcome]]) -> None:
        self._sync = sync
        self._workers: dict[str, _Worker] = {}

    def __contains__(self, uid: str) -> bool:
        return uid in self._workers

    def update(self, uid: str) -> None:
        worker = self._workers.get(uid)
        if worker is None:
            worker = self._workers[uid] = _Worker()
            worker.task = asyncio.get_running_loop().create_task(self._run(uid, worker), name=f"pod-worker-{uid}")
        worker.dirty.set()

    def update_after(self, uid: str, seconds: float) -> None:
        worker = self._workers.get(uid)
        if worker is None:
            return
        if worker.timer is not None:
            worker.timer.cancel()
        worker.timer = asyncio.get_running_loop().call_later(seconds, worker.dirty.set)

    async def stop(self) -> None:
        tasks = [w.task for w in self._workers.values() if w.task is not None]
        for worker in self._workers.values():
            if worker.timer is not None:
                worker.timer.cancel()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._workers.clear()

    async def _run(self, uid: str, worker: _Worker) -> None:
        try:
            while True:
                await worker.dirty.wait()
                worker.dirty.clear()
                try:
                    outcome = await self._sync(uid)
                except Exception:
                    log.exception("syncing pod %s failed", uid)
                    outcome = SyncOutcome(retry_in=RETRY_AFTER_ERROR)
                if outcome.finished and not worker.dirty.is_set():
                    return
                if outcome.retry_in is not None:
                    self.update_after(uid, outcome.retry_in)
        finally:
            if worker.timer is not None:
                worker.timer.cancel()
            if self._workers.get(uid) is worker:
                del self._workers[uid]
