"""Kubeconfig files: the cluster's standalone admin kubeconfig and our entries in the user's own.

`mkpy up` writes `<cluster dir>/kubeconfig` (CA and admin client certificate embedded, so it works when
copied anywhere) and merges its cluster, user and context, all named `mkpy-<name>`, into the kubeconfig
kubectl writes to; `mkpy delete` removes exactly those three entries again.

Usage rules, chosen to be safe with a file the user cares about:
* The target file is the one kubectl itself would modify: the only file in `$KUBECONFIG`, else the first
  of its files that exists, else the last one; without `$KUBECONFIG`, `~/.kube/config`. A target that is
  one of mkpy's own standalone kubeconfigs (after `export KUBECONFIG=...` from `mkpy up`'s hint) is never
  written to; `~/.kube/config` is used instead.
* Before the first write, the existing file is copied to `<file>.mkpy-backup`; that backup is never
  overwritten, so it always holds the file as it was before mkpy touched it.
* Entries with other names, and every other key in the file (preferences, extensions), are kept as they are.
  YAML comments are lost on rewrite, as with `kubectl config`.
* `current-context` is switched to ours unless the caller says not to; deleting our context unsets
  `current-context` only if it pointed at ours.
"""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path
from typing import Any

import yaml

from minikube_py.auth.pki import write_file

SECTIONS = ("clusters", "users", "contexts")


class KubeconfigError(Exception):
    """The user's kubeconfig cannot be read or written; the message says which file and why."""


def standalone(entry_name: str, server: str, ca_pem: bytes, client_cert_pem: bytes,
               client_key_pem: bytes) -> dict[str, Any]:
    """A complete kubeconfig with one cluster, user and context, all named `entry_name`, selected."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": entry_name, "cluster": {
            "server": server, "certificate-authority-data": _b64(ca_pem)}}],
        "users": [{"name": entry_name, "user": {
            "client-certificate-data": _b64(client_cert_pem), "client-key-data": _b64(client_key_pem)}}],
        "contexts": [{"name": entry_name, "context": {"cluster": entry_name, "user": entry_name}}],
        "current-context": entry_name,
        "preferences": {},
    }


def write(path: Path, config: dict[str, Any]) -> None:
    """Write a kubeconfig, readable only by its owner (it holds a private key)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path, yaml.safe_dump(config, sort_keys=False).encode(), mode=0o600)


def user_kubeconfig_path(mkpy_home: Path) -> Path:
    """The kubeconfig kubectl would write to (see the module docstring), never one under `mkpy_home`."""
    default = Path.home() / ".kube" / "config"
    files = [Path(p).expanduser() for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if not files:
        return default
    existing = [f for f in files if f.exists()]
    target = files[0] if len(files) == 1 else (existing[0] if existing else files[-1])
    if target.resolve().is_relative_to(mkpy_home.resolve()):
        return default
    return target


def merge(path: Path, ours: dict[str, Any], *, switch_context: bool) -> None:
    """Add or replace our entries (by name) in the kubeconfig at `path`, creating it if needed."""
    config = _load(path)
    for section in SECTIONS:
        entries = config.get(section) or []
        for entry in ours[section]:
            names = [existing.get("name") for existing in entries]
            if entry["name"] in names:
                entries[names.index(entry["name"])] = entry
            else:
                entries.append(entry)
        config[section] = entries
    if switch_context:
        config["current-context"] = ours["current-context"]
    _save(path, config)


def remove(path: Path, entry_name: str) -> bool:
    """Remove the cluster, user and context named `entry_name`; whether the file changed."""
    if not path.exists():
        return False
    config = _load(path)
    changed = False
    for section in SECTIONS:
        entries = config.get(section) or []
        kept = [entry for entry in entries if entry.get("name") != entry_name]
        changed |= len(kept) != len(entries)
        config[section] = kept
    if config.get("current-context") == entry_name:
        config["current-context"] = ""
        changed = True
    if changed:
        _save(path, config)
    return changed


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text() if path.exists() else ""
        config = yaml.safe_load(text) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise KubeconfigError(f"cannot read {path}: {_one_line(err)}") from err
    if not isinstance(config, dict) or not all(_is_entry_list(config.get(section) or []) for section in SECTIONS):
        raise KubeconfigError(f"{path} is not a kubeconfig (expected a mapping with clusters/users/contexts lists)")
    config.setdefault("apiVersion", "v1")
    config.setdefault("kind", "Config")
    return config


def _save(path: Path, config: dict[str, Any]) -> None:
    backup = path.with_name(path.name + ".mkpy-backup")
    try:
        if path.exists() and not backup.exists():
            shutil.copy2(path, backup)
            os.chmod(backup, 0o600)
        write(path, config)
    except OSError as err:
        raise KubeconfigError(f"cannot write {path}: {_one_line(err)}") from err


def _is_entry_list(entries: object) -> bool:
    return isinstance(entries, list) and all(isinstance(entry, dict) for entry in entries)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _one_line(err: Exception) -> str:
    return " ".join(str(err).split())
