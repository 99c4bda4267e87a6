"""The local cloud's state: one JSON file (`stateFile` in the cloud config) that is the cloud's database.

    {"instances":     {"<node>": {"providerID": "local://<cluster>/<node>", "instanceType": ..., "zone": ...,
                                  "region": ..., "state": "running" | "stopped" | "terminated"}},
     "loadBalancers": {"<name>": {"service": "<ns>/<name>", "address": ..., "ports": [...], ...}},
     "routes":        {"<name>": {"targetNode": ..., "destinationCIDR": ...}}}

Two kinds of process change it: the CCM (through the provider: load balancers, routes) and `mkpy cloud` / `mkpy
up` (the cloud console: launching, stopping, terminating instances). So every change is a locked
read-modify-write, and the file is replaced atomically:

    store = CloudStateStore(path)
    with store.edit() as state:          # an exclusive lock on <path>.lock for the whole block
        state["instances"]["mkpy"]["state"] = "stopped"
    store.read()                         # a consistent snapshot, no lock held afterwards

Usage rules: keep the blocks short (the lock is shared with other processes) and do no awaiting inside them.
A missing file reads as an empty cloud; an unreadable one is an error (`CloudStateError`), never silently reset.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from minikube_py.ccm.cloud.interface import CloudProviderError

SECTIONS = ("instances", "loadBalancers", "routes")

State = dict[str, dict[str, dict[str, Any]]]


class CloudStateError(CloudProviderError):
    """The state file cannot be read or written."""


class CloudStateStore:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def read(self) -> State:
        with self._locked(fcntl.LOCK_SH):
            return self._load()

    @contextlib.contextmanager
    def edit(self) -> Iterator[State]:
        """The state to change in place; written back when the block ends without an exception."""
        with self._locked(fcntl.LOCK_EX):
            state = self._load()
            before = copy.deepcopy(state)
            yield state
            if state != before:
                self._save(state)

    def _load(self) -> State:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raw = {}
        except (OSError, ValueError) as error:
            raise CloudStateError(f"cloud state {self.path}: {error}") from None
        if not isinstance(raw, dict):
            raise CloudStateError(f"cloud state {self.path}: not a JSON object")
        return {section: dict(raw.get(section) or {}) for section in SECTIONS}

    def _save(self, state: State) -> None:
        temporary = self.path.with_name(f".{self.path.name}.tmp")
        try:
            temporary.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError as error:
            raise CloudStateError(f"cloud state {self.path}: {error}") from None

    @contextlib.contextmanager
    def _locked(self, mode: int) -> Iterator[None]:
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            lock = open(self.path.with_name(f".{self.path.name}.lock"), "a")  # noqa: SIM115 - held for the block
        except OSError as error:
            raise CloudStateError(f"cloud state {self.path}: {error}") from None
        with lock:
            fcntl.flock(lock, mode)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
