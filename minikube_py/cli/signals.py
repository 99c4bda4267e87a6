"""Running a component's main coroutine in the foreground until SIGTERM or SIGINT, as every `mkpy <component>`
command does: the signal cancels the coroutine, so its `finally` blocks release Leases and close servers.

    stopped = asyncio.run(run_until_signalled(app.run(options)))   # True: a signal; False: main returned

Before it starts the component it settles the heap (`heap.settle`): what the imports and the configuration
made is exempt from garbage collection from then on.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any

from .. import heap


async def run_until_signalled(main: Coroutine[Any, Any, Any]) -> bool:
    heap.settle()
    task = asyncio.ensure_future(main)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, task.cancel)
    try:
        await task
    except asyncio.CancelledError:
        return True
    return False
