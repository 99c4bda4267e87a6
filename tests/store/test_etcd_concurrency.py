"""Optimistic concurrency against a real etcd: many writers updating one object with resourceVersion
preconditions and retry-on-conflict lose no update."""

from __future__ import annotations

import asyncio
import json

from minikube_py.store.errors import ConflictError
from minikube_py.store.etcd import EtcdStorage
from minikube_py.store.interface import KeyValue

WRITERS = 20
INCREMENTS = 10


async def increment(storage: EtcdStorage, key: str) -> int:
    """Add one to the JSON counter at `key` the way a controller updates an object; returns the conflicts met."""
    kv = await storage.get(key)
    conflicts = 0
    while True:
        assert kv is not None
        counter = json.loads(kv.value)
        counter["n"] += 1
        try:
            await storage.update(key, json.dumps(counter).encode(), expected_revision=kv.mod_revision)
            return conflicts
        except ConflictError as err:
            conflicts += 1
            kv = err.current


async def writer(storage: EtcdStorage, key: str) -> int:
    conflicts = 0
    for _ in range(INCREMENTS):
        conflicts += await increment(storage, key)
    return conflicts


async def test_concurrent_writers_with_preconditions_lose_no_update(storage: EtcdStorage, prefix: str) -> None:
    key = prefix + "counter"
    await storage.create(key, b'{"n": 0}')

    conflicts = await asyncio.gather(*(writer(storage, key) for _ in range(WRITERS)))

    final: KeyValue | None = await storage.get(key)
    assert final is not None
    assert json.loads(final.value) == {"n": WRITERS * INCREMENTS}
    assert sum(conflicts) > 0, "the writers never raced: the test proves nothing"
