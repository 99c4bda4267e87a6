"""The apiserver's long-running loops (CRD serving, ClusterRole aggregation), started and stopped one way.

A `BackgroundTask` runs one coroutine function over and over for the life of the server: when it returns it
is run again; when it raises, the error is logged and it is run again after `retry_after` seconds, so one
bad object or a moment without etcd never ends the loop for good. `APIServer.stop` stops every task it
started.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


class BackgroundTask:
    def __init__(self, name: str, body: Callable[[], Awaitable[None]], *, retry_after: float = 0.5) -> None:
        self.name = name
        self.body = body
        self.retry_after = retry_after
        self._task: asyncio.Task[None] | None = None

    def start(self) -> BackgroundTask:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            try:
                await self.body()
            except Exception:  # keep the loop alive whatever one round does; say what happened
                log.exception("%s failed; retrying", self.name)
                await asyncio.sleep(self.retry_after)
