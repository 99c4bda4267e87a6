"""EtcdStorage against an etcd cluster of three members: losing one member is invisible to reads, writes and
watches; and a store that cannot reach etcd says so with UnavailableError."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from minikube_py.store.errors import UnavailableError
from minikube_py.store.etcd import EtcdStorage
from minikube_py.store.etcd_server import EtcdCluster, free_port

from .helpers import changes

WRITES = 10


@pytest.fixture()
def cluster() -> Iterator[EtcdCluster]:
    with EtcdCluster(3) as started:
        yield started


async def create_retrying_once(storage: EtcdStorage, key: str) -> int:
    """Create `key`; one UnavailableError is tolerated, for a write sent the instant its member died."""
    try:
        return await storage.create(key, b"")
    except UnavailableError:
        return await storage.create(key, b"")


@pytest.mark.parametrize(("timeout", "age"), [(5.0, 0.0), (1.0, 1.5)], ids=[
    "watches just created",
    "watches older than the timeout, which counts from the break, not from their creation",
])
async def test_a_multi_endpoint_client_survives_losing_a_member(cluster: EtcdCluster, timeout: float,
                                                                age: float) -> None:
    storage = await EtcdStorage.connect(cluster.endpoints, timeout=timeout)
    start = await storage.current_revision() + 1
    # A killed leader holds writes already forwarded to it for etcd's 5 s request timeout: a property of
    # etcd, not of this client, so the test kills a follower.
    follower = next(member for member in cluster.members if not member.is_leader())
    try:
        # Round-robin puts one watch stream on each member, so one of them loses its stream.
        async with (storage.watch("/registry/failover/", start_revision=start) as first,
                    storage.watch("/registry/failover/", start_revision=start) as second,
                    storage.watch("/registry/failover/", start_revision=start) as third):
            await asyncio.sleep(age)
            follower.kill()
            written = [await create_retrying_once(storage, f"/registry/failover/{i}") for i in range(WRITES)]

            for events in (first, second, third):
                assert [event.revision for event in await changes(events, WRITES)] == written
        assert (await storage.list("/registry/failover/")).revision >= written[-1]
        assert await storage.count("/registry/failover/") == WRITES
    finally:
        await storage.close()


async def test_connecting_to_no_etcd_raises_unavailable() -> None:
    with pytest.raises(UnavailableError):
        await EtcdStorage.connect([f"http://127.0.0.1:{free_port()}"], timeout=0.3)

