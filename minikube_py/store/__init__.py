"""Storage for the apiserver: the `Storage` interface, its etcd backend and the compactor.

Only the apiserver imports this package (tests and benchmarks aside). Running an etcd process is in
`minikube_py.store.etcd_server`, imported directly by whoever supervises processes.
"""

from .compactor import Compactor
from .errors import (
    CompactedError,
    ConflictError,
    FutureRevisionError,
    KeyExistsError,
    KeyNotFoundError,
    StoreError,
    UnavailableError,
)
from .etcd import EtcdStorage
from .interface import KeyValue, ListResult, Storage, WatchEvent

__all__ = [
    "CompactedError",
    "Compactor",
    "ConflictError",
    "EtcdStorage",
    "FutureRevisionError",
    "KeyExistsError",
    "KeyNotFoundError",
    "KeyValue",
    "ListResult",
    "Storage",
    "StoreError",
    "UnavailableError",
    "WatchEvent",
]
