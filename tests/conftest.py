"""Fixtures shared by every test package.

`etcd_server` is one real etcd member for the whole session (fast elections, no fsync, progress
notifications every 250 ms so that watch bookmarks can be tested quickly). Tests share it: use a unique key
prefix per test, and remember that compaction is global (compact only at revisions your own test made).
`storage` is a client of it (the apiserver's `EtcdStorage`), one per test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from minikube_py.store.etcd import EtcdStorage
from minikube_py.store.etcd_server import EtcdServer

PROGRESS_NOTIFY_INTERVAL = "250ms"


@pytest.fixture(scope="session")
def etcd_server() -> Iterator[EtcdServer]:
    with EtcdServer(progress_notify_interval=PROGRESS_NOTIFY_INTERVAL) as server:
        yield server


@pytest.fixture()
async def storage(etcd_server: EtcdServer) -> AsyncIterator[EtcdStorage]:
    store = await EtcdStorage.connect([etcd_server.endpoint], timeout=5.0)
    yield store
    await store.close()
