"""A real control plane shared by the client-machinery tests of a session, and a fresh namespace per test."""

from tests.fixtures import api, control_plane, namespace

__all__ = ["api", "control_plane", "namespace"]
