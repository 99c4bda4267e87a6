"""Keys that expire (`ttl` on create and update) against a real etcd: etcd deletes them and watchers see it;
writes share leases as store/leases.py says. Each test has a client of its own, so its lease manager starts
with no lease; a key's lease is read straight from etcd (the `lease` field of a Range)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from aetcd import rpc

from minikube_py.store import leases
from minikube_py.store.etcd import EtcdStorage, grpc_target
from minikube_py.store.etcd_server import EtcdServer
from tests.store.helpers import changes

EXPIRY_DEADLINE = 10.0  # seconds a key written with ttl=2 may take to disappear, generously


@pytest.fixture()
async def etcd(etcd_server: EtcdServer) -> AsyncIterator[grpc.aio.Channel]:
    """A raw gRPC channel to etcd, for what EtcdStorage does not show: leases."""
    channel = grpc.aio.insecure_channel(await grpc_target([etcd_server.endpoint]))
    yield channel
    await channel.close()


async def lease_of(etcd: grpc.aio.Channel, key: str) -> int:
    response = await rpc.KVStub(etcd).Range(rpc.RangeRequest(key=key.encode()))
    assert response.kvs, f"{key} is gone"
    return int(response.kvs[0].lease)


async def granted_ttl(etcd: grpc.aio.Channel, lease: int) -> int:
    response = await rpc.LeaseStub(etcd).LeaseTimeToLive(rpc.LeaseTimeToLiveRequest(ID=lease))
    return int(response.grantedTTL)


async def wait_gone(storage: EtcdStorage, key: str) -> None:
    async with asyncio.timeout(EXPIRY_DEADLINE):
        while await storage.get(key) is not None:
            await asyncio.sleep(0.1)


async def test_a_key_created_with_a_ttl_disappears_and_watchers_see_it_deleted(
        storage: EtcdStorage, prefix: str) -> None:
    async with storage.watch(prefix, start_revision=0) as events:
        created = await storage.create(prefix + "a", b"expiring", ttl=2)
        await wait_gone(storage, prefix + "a")
        put, deleted = await changes(events, 2)

    assert (put.type, put.revision) == ("PUT", created)
    assert deleted.type == "DELETE" and deleted.prev is not None and deleted.prev.value == b"expiring"


async def test_an_update_with_a_ttl_makes_a_key_expire(storage: EtcdStorage, prefix: str) -> None:
    revision = await storage.create(prefix + "a", b"kept")
    await storage.update(prefix + "a", b"expiring", expected_revision=revision, ttl=2)

    await wait_gone(storage, prefix + "a")


async def test_a_write_without_a_ttl_attaches_no_lease_and_detaches_an_earlier_one(
        storage: EtcdStorage, etcd: grpc.aio.Channel, prefix: str) -> None:
    await storage.create(prefix + "plain", b"1")
    revision = await storage.create(prefix + "detached", b"1", ttl=100)
    attached = await lease_of(etcd, prefix + "detached")
    await storage.update(prefix + "detached", b"2", expected_revision=revision)

    assert await lease_of(etcd, prefix + "plain") == 0
    assert attached != 0 and await lease_of(etcd, prefix + "detached") == 0


async def test_keys_written_close_together_share_a_lease_of_ttl_plus_the_reuse_window(
        storage: EtcdStorage, etcd: grpc.aio.Channel, prefix: str) -> None:
    revision = await storage.create(prefix + "a", b"1", ttl=100)
    await storage.create(prefix + "b", b"1", ttl=100)
    await storage.update(prefix + "a", b"2", expected_revision=revision, ttl=100)

    lease = await lease_of(etcd, prefix + "a")
    assert lease != 0 and await lease_of(etcd, prefix + "b") == lease
    assert await granted_ttl(etcd, lease) == 105


async def test_a_lease_with_the_most_keys_allowed_is_not_given_more(
        storage: EtcdStorage, etcd: grpc.aio.Channel, prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(leases, "LEASE_MAX_OBJECT_COUNT", 2)
    for name in "abc":
        await storage.create(prefix + name, b"1", ttl=100)

    a, b, c = [await lease_of(etcd, prefix + name) for name in "abc"]
    assert a == b != c


async def test_concurrent_first_writes_are_granted_one_lease(
        storage: EtcdStorage, etcd: grpc.aio.Channel, prefix: str) -> None:
    await asyncio.gather(*(storage.create(f"{prefix}{i}", b"1", ttl=100) for i in range(20)))

    assert len({await lease_of(etcd, f"{prefix}{i}") for i in range(20)}) == 1
