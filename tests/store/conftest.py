"""Fixtures for the storage contract tests: a client on the session's etcd and a fresh key prefix per test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from minikube_py.store.etcd import EtcdStorage
from minikube_py.store.etcd_server import EtcdServer


@pytest.fixture()
async def storage(etcd_server: EtcdServer) -> AsyncIterator[EtcdStorage]:
    store = await EtcdStorage.connect([etcd_server.endpoint], timeout=5.0)
    yield store
    await store.close()


@pytest.fixture()
def prefix() -> str:
    """A key prefix no other test uses, shaped like a kube resource prefix."""
    return f"/registry/test-{uuid.uuid4().hex[:8]}/"
