"""One real control plane (etcd + apiserver process) shared by the API tests of a session."""

from tests.fixtures import api, control_plane, namespace

__all__ = ["api", "control_plane", "namespace"]
