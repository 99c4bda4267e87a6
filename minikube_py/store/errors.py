"""Errors raised by storage backends; the apiserver maps each to a kube status (404, 409, 410, 503)."""

from __future__ import annotations

from .interface import KeyValue


class StoreError(Exception):
    """Base class of all storage errors."""


class KeyExistsError(StoreError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key exists: {key}")
        self.key = key


class KeyNotFoundError(StoreError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key not found: {key}")
        self.key = key


class ConflictError(StoreError):
    """The key's mod_revision did not match; `current` is the value now stored (None if deleted)."""

    def __init__(self, key: str, current: KeyValue | None) -> None:
        super().__init__(f"revision mismatch on {key}")
        self.key = key
        self.current = current


class CompactedError(StoreError):
    """The requested revision is older than the compacted revision (kube: 410 Gone); `compacted` is 0 if unknown."""

    def __init__(self, requested: int, compacted: int) -> None:
        super().__init__(f"required revision {requested} has been compacted (compacted revision {compacted})")
        self.requested = requested
        self.compacted = compacted


class FutureRevisionError(StoreError):
    """The requested revision is newer than the store's current revision (kube: "Too large resource version")."""

    def __init__(self, requested: int) -> None:
        super().__init__(f"required revision {requested} is a future revision")
        self.requested = requested


class UnavailableError(StoreError):
    """The backend cannot be reached."""
