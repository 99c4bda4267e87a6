"""The lease manager's reuse rules, against a fake Lease service and a clock the tests move by hand (the
same rules against a real etcd: test_etcd_leases.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from minikube_py.store import leases
from minikube_py.store.leases import LeaseManager, reuse_window


class FakeLeases:
    """etcd's Lease service, recording the TTL of every lease it grants; ids count up from 1."""

    def __init__(self) -> None:
        self.granted: list[int] = []

    async def LeaseGrant(self, request: Any, **_: Any) -> Any:
        await asyncio.sleep(0)  # a real grant is a round trip: let other callers run meanwhile
        self.granted.append(request.TTL)
        return type("LeaseGrantResponse", (), {"ID": len(self.granted)})


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def service() -> FakeLeases:
    return FakeLeases()


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def manager(service: FakeLeases, clock: Clock) -> LeaseManager:
    return LeaseManager(service, timeout=5.0, clock=clock)  # type: ignore[arg-type]


@pytest.mark.parametrize("ttl, window", [
    (3600, 60), (1200, 60), (1000, 50), (100, 5), (20, 1), (19, 0), (2, 0),
])
def test_the_reuse_window_is_five_percent_of_the_ttl_and_at_most_a_minute(ttl: int, window: int) -> None:
    assert reuse_window(ttl) == window


async def test_writes_close_together_share_one_lease_of_ttl_plus_the_window(
        manager: LeaseManager, service: FakeLeases, clock: Clock) -> None:
    first = await manager.get_lease(100)
    clock.now += 4.9
    assert await manager.get_lease(100) == first
    assert service.granted == [105]


async def test_a_lease_that_would_end_within_the_ttl_is_not_reused(
        manager: LeaseManager, service: FakeLeases, clock: Clock) -> None:
    first = await manager.get_lease(100)
    clock.now += 5
    assert await manager.get_lease(100) != first
    assert service.granted == [105, 105]


@pytest.mark.parametrize("first_ttl, second_ttl", [(3600, 100), (100, 3600)])
async def test_a_lease_granted_for_another_ttl_is_not_reused(
        manager: LeaseManager, service: FakeLeases, first_ttl: int, second_ttl: int) -> None:
    assert await manager.get_lease(first_ttl) != await manager.get_lease(second_ttl)
    assert service.granted == [first_ttl + reuse_window(first_ttl), second_ttl + reuse_window(second_ttl)]


async def test_a_full_lease_is_replaced_by_a_new_one(
        manager: LeaseManager, service: FakeLeases, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(leases, "LEASE_MAX_OBJECT_COUNT", 3)
    ids = [await manager.get_lease(3600) for _ in range(7)]
    assert ids == [1, 1, 1, 2, 2, 2, 3]


async def test_without_a_reuse_window_every_write_gets_a_lease_of_its_own(
        manager: LeaseManager, service: FakeLeases) -> None:
    assert [await manager.get_lease(2) for _ in range(3)] == [1, 2, 3]
    assert service.granted == [2, 2, 2]


async def test_callers_asking_at_the_same_moment_share_one_grant(
        manager: LeaseManager, service: FakeLeases) -> None:
    ids = await asyncio.gather(*(manager.get_lease(3600) for _ in range(20)))
    assert set(ids) == {1} and service.granted == [3660]
