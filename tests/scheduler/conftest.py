"""Fixtures for the scheduler's integration tests: one real control plane and one default scheduler process
per session, a namespace and a node list (deleted afterwards) per test.

Unit tests in this package request none of these, so they run without starting anything.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.fixtures import api, control_plane, new_namespace
from tests.harness import ControlPlane
from tests.scheduler.cluster import Cluster, SchedulerProcess

__all__ = ["api", "control_plane", "cluster", "default_scheduler"]


@pytest.fixture(scope="session")
def default_scheduler(control_plane: ControlPlane) -> Iterator[SchedulerProcess]:
    process = SchedulerProcess(control_plane, "--explain").wait_ready()
    yield process
    process.stop()


@pytest.fixture()
def cluster(api: httpx.Client) -> Iterator[Cluster]:
    """A fresh namespace; the nodes a test adds are deleted when it ends (nodes are cluster-wide)."""
    cluster = Cluster(api, new_namespace(api))
    yield cluster
    cluster.delete_nodes()
