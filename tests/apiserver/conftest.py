"""One real control plane (etcd + apiserver process) shared by the API tests of a session."""

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
    """A fresh namespace per test, so tests never see each other's objects."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    r = api.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert r.status_code == 201, r.text
    return name
