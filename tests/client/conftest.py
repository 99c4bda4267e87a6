"""A real control plane shared by the client-machinery tests of a session, and a fresh namespace per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.harness import ControlPlane


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    cp = ControlPlane().start()
    yield cp
    cp.stop()


@pytest.fixture()
def api(control_plane: ControlPlane) -> Iterator[httpx.Client]:
    with control_plane.client() as client:
        yield client


@pytest.fixture()
def namespace(api: httpx.Client) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    r = api.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert r.status_code == 201, r.text
    return name
