"""Fixtures for the kubelet tests: a control plane of their own (tests/fixtures.py) and a simulated node."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.fixtures import api, control_plane, namespace  # noqa: F401  (fixtures)
from tests.harness import ControlPlane
from tests.kubelet.nodes import FakeNode


@pytest.fixture(scope="session")
def fake_node(control_plane: ControlPlane) -> Iterator[FakeNode]:  # noqa: F811
    node = FakeNode(control_plane, "sim-1")
    try:
        with control_plane.client() as client:
            node.wait_ready(client)
        yield node
    finally:
        node.stop()  # also when it never got Ready: no runtime process outlives the tests


@pytest.fixture()
def node_api(api: httpx.Client, fake_node: FakeNode) -> httpx.Client:  # noqa: F811
    return api
