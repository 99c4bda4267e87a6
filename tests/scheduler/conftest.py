"""Fixtures for the scheduler's integration tests: one real control plane and one default scheduler process
per session, a namespace and a node list (deleted afterwards) per test.

Unit tests in this package request none of these, so they run without starting anything.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.harness import ControlPlane
from tests.scheduler.cluster import Cluster, SchedulerProcess


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    cp = ControlPlane().start()
    yield cp
    cp.stop()


@pytest.fixture(scope="session")
def default_scheduler(control_plane: ControlPlane) -> Iterator[SchedulerProcess]:
    process = SchedulerProcess(control_plane, "--explain").wait_ready()
    yield process
    process.stop()


@pytest.fixture()
def api(control_plane: ControlPlane) -> Iterator[httpx.Client]:
    with control_plane.client() as client:
        yield client


@pytest.fixture()
def cluster(api: httpx.Client) -> Iterator[Cluster]:
    """A fresh namespace; the nodes a test adds are deleted when it ends (nodes are cluster-wide)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    r = api.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert r.status_code == 201, r.text
    cluster = Cluster(api, name)
    yield cluster
    cluster.delete_nodes()
