"""Fixtures for the controller manager tests: a control plane of their own (tests/fixtures.py)."""

from tests.fixtures import api, control_plane, namespace  # noqa: F401  (fixtures)
