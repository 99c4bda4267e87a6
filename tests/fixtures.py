"""Fixtures over a real control plane, imported by the conftest of each package that needs one.

Each package that imports them gets its own session-wide control plane (pytest keeps one instance per
conftest that defines a fixture), so API, client and scheduler tests never see each other's objects:
the scheduler tests' scheduler never touches the pods the API tests create.
"""

from __future__ import annotations

import time
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


def new_namespace(api: httpx.Client) -> str:
    """A new namespace, returned once the controller manager has made its `default` ServiceAccount (pods are
    refused without it; kube's e2e framework waits for it the same way)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    r = api.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert r.status_code == 201, r.text
    deadline = time.monotonic() + 30
    while api.get(f"/api/v1/namespaces/{name}/serviceaccounts/default").status_code != 200:
        assert time.monotonic() < deadline, f"namespace {name} got no default ServiceAccount in 30 s"
        time.sleep(0.05)
    return name


@pytest.fixture()
def namespace(api: httpx.Client) -> str:
    """A fresh namespace per test, so tests never see each other's objects."""
    return new_namespace(api)
