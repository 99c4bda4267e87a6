"""A compact way to write PolicyRules for the bootstrap policy (`bootstrap.py`, `controller_roles.py`).

`rule("get list", CORE, "pods pods/log")` is the PolicyRule JSON with those verbs, API groups and
resources: verbs, resources and resource names are space-separated words; groups are a tuple, because the
core group is the empty string.
"""

from __future__ import annotations

from typing import Any

CORE = ("",)
READ = "get list watch"
WRITE = "create delete deletecollection patch update"
READ_WRITE = READ + " " + WRITE


def rule(verbs: str, groups: tuple[str, ...], resources: str, names: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"verbs": verbs.split(), "apiGroups": list(groups), "resources": resources.split()}
    if names:
        out["resourceNames"] = names.split()
    return out


def urls(verbs: str, paths: str) -> dict[str, Any]:
    return {"verbs": verbs.split(), "nonResourceURLs": paths.split()}


EVENTS = rule("create patch update", ("", "events.k8s.io"), "events")
