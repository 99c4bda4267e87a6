"""Revisions of a workload's template: the `pod-template-hash` of Deployments and the ControllerRevisions of
StatefulSets and DaemonSets.

A controller that rolls a template out must name each version of it, so that it can tell which pods run
which version and go back to an earlier one:

* `template_hash(data, collision_count)`: a short, stable name for a version: the 32-bit FNV-1a hash of the
  data's canonical JSON (plus the owner's `status.collisionCount`, bumped when two versions would get the
  same name), written in kube's "safe" alphabet of consonants and digits so that it can never spell a word.
  A Deployment puts it on its ReplicaSets and their pods as the `pod-template-hash` label.
* ControllerRevisions (`apps/v1`, a StatefulSet's or DaemonSet's history): `new_revision(parent, data,
  revision, collision_count, hash_label)` builds one named `<parent>-<hash>`, labelled like the parent's
  pods plus the hash (`controller.kubernetes.io/hash`; a DaemonSet's are labelled `controller-revision-hash`),
  carrying the parent's annotations (so `kubectl rollout history` shows its `kubernetes.io/change-cause`),
  owned by the parent, holding `data` (the part of the parent's spec that makes a version: its pod template)
  and its `revision` number, one more than the highest so far (`next_revision`). `equal_revision` compares
  two by hash and data, so a revision identical to an older one is reused (`renumber_revision` makes it the
  newest) instead of duplicated.

Usage rules: `data` must be JSON-serialisable; the hash covers all of it, so callers pass exactly the
fields whose change makes a new version.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from minikube_py.api.names import SAFE_ALPHABET
from minikube_py.client import resources
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.controllers.podcontrol import controller_ref

HASH_LABEL = "controller.kubernetes.io/hash"
_FNV_OFFSET, _FNV_PRIME = 0x811C9DC5, 0x01000193


def fnv32a(data: bytes) -> int:
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    return "".join(SAFE_ALPHABET[ord(char) % len(SAFE_ALPHABET)] for char in text)


def template_hash(data: Any, collision_count: int | None = None) -> str:
    payload = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    if collision_count:
        payload += collision_count.to_bytes(4, "little")
    return safe_encode(str(fnv32a(payload)))


def new_revision(parent: dict[str, Any], data: dict[str, Any], revision: int, collision_count: int | None = None,
                 hash_label: str = HASH_LABEL) -> dict[str, Any]:
    """A ControllerRevision of `parent` (with apiVersion and kind set) holding `data`, its hash under
    `hash_label`."""
    meta = parent["metadata"]
    digest = template_hash(data, collision_count)
    labels = dict((((parent.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {})
    labels[hash_label] = digest
    revision_meta = {"name": f"{meta['name']}-{digest}", "namespace": meta["namespace"], "labels": labels,
                     "ownerReferences": [controller_ref(parent)]}
    if meta.get("annotations"):
        revision_meta["annotations"] = dict(meta["annotations"])
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": revision_meta,
            "data": copy.deepcopy(data), "revision": revision}


async def renumber_revision(client: RESTClient, revision: dict[str, Any], number: int) -> dict[str, Any]:
    """Make `revision` revision `number` (an old version that became current again is renumbered as the
    newest, instead of being stored twice)."""
    if int(revision.get("revision", 0)) == number:
        return revision
    updated = copy.deepcopy(revision)
    updated["revision"] = number
    return await client.update(resources.CONTROLLER_REVISIONS, updated, revision["metadata"]["namespace"])


def next_revision(revisions: list[dict[str, Any]]) -> int:
    return max((int(r.get("revision", 0)) for r in revisions), default=0) + 1


def equal_revision(a: dict[str, Any], b: dict[str, Any]) -> bool:
    hash_a = (a["metadata"].get("labels") or {}).get(HASH_LABEL)
    hash_b = (b["metadata"].get("labels") or {}).get(HASH_LABEL)
    return hash_a is not None and hash_a == hash_b and a.get("data") == b.get("data")


def sort_revisions(revisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Oldest first: by revision number, then creation time, then name."""
    return sorted(revisions, key=lambda r: (int(r.get("revision", 0)),
                                            r["metadata"].get("creationTimestamp", ""), r["metadata"]["name"]))
