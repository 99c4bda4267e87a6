"""The controller worker loop, written once: take a key, sync it, forget or retry it, give it back.

Every controller has the sample-controller shape: informer event handlers only enqueue "namespace/name" keys
on a `RateLimitingQueue`, and one `async def sync(key)` holds all the logic. `run_workers` runs N workers over
that queue:

    key, shutdown = await queue.get()      # never the same key in two workers at once
    await sync(key)                        # success → queue.forget(key) (backoff reset)
                                           # exception → logged, queue.add_rate_limited(key)
    queue.done(key)                        # always; a key re-added meanwhile is queued again

Usage rules:
* `sync` must be idempotent: it may run again for the same key at any time, and it reads the current state
  from listers rather than trusting the event that enqueued the key.
* A `sync` that raises never kills a worker. With `max_retries`, a key that failed that many times in a row
  is dropped (forgotten, logged) instead of retried; the next event for it starts a fresh backoff.
* `run_workers` returns once the queue is shut down and empty; cancelling it stops the workers, and each
  gives back the key it was holding.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable

from minikube_py.client.workqueue import RateLimitingQueue

Sync = Callable[[Hashable], Awaitable[None]]


async def run_workers(queue: RateLimitingQueue, sync: Sync, workers: int = 1, *, name: str,
                      max_retries: int | None = None, logger: logging.Logger | None = None) -> None:
    """Run `workers` workers calling `sync(key)` for each key from `queue` until it shuts down."""
    if workers < 1:
        raise ValueError(f"{name}: workers must be at least 1, got {workers}")
    if max_retries is not None and max_retries < 0:
        raise ValueError(f"{name}: max_retries must not be negative, got {max_retries}")
    log = logger or logging.getLogger(f"minikube_py.controller.{name}")
    log.info("starting %d worker(s) for %s", workers, name)
    async with asyncio.TaskGroup() as group:
        for index in range(workers):
            group.create_task(_worker(queue, sync, name, max_retries, log), name=f"{name}-worker-{index}")
    log.info("workers for %s stopped", name)


async def _worker(queue: RateLimitingQueue, sync: Sync, name: str, max_retries: int | None,
                  log: logging.Logger) -> None:
    while await process_next_work_item(queue, sync, name=name, max_retries=max_retries, log=log):
        await asyncio.sleep(0)  # `get` does not suspend while keys are queued: let other tasks run


async def process_next_work_item(queue: RateLimitingQueue, sync: Sync, *, name: str,
                                 max_retries: int | None, log: logging.Logger) -> bool:
    """One turn of a worker; False once the queue is shut down and empty."""
    key, shutdown = await queue.get()
    if shutdown:
        return False
    try:
        await sync(key)
    except asyncio.CancelledError:
        raise
    except Exception as err:  # a failing sync is retried (or dropped), never fatal to the worker
        _handle_error(queue, key, err, name, max_retries, log)
    else:
        queue.forget(key)
    finally:
        queue.done(key)
    return True


def _handle_error(queue: RateLimitingQueue, key: Hashable, err: Exception, name: str,
                  max_retries: int | None, log: logging.Logger) -> None:
    if max_retries is not None and queue.num_requeues(key) >= max_retries:
        queue.forget(key)
        log.warning("%s: dropping %r out of the queue after %d retries: %s", name, key, max_retries, err,
                    exc_info=err)
        return
    log.error("%s: error syncing %r, requeuing: %s", name, key, err, exc_info=err)
    queue.add_rate_limited(key)
