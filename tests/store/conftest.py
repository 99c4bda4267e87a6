"""Fixtures for the storage contract tests: a fresh key prefix per test (their etcd client, `storage`, is
tests/conftest.py's)."""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture()
def prefix() -> str:
    """A key prefix no other test uses, shaped like a kube resource prefix."""
    return f"/registry/test-{uuid.uuid4().hex[:8]}/"
