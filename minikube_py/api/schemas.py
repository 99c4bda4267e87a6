"""The upstream Kubernetes 1.32 schemas, as shipped by the `kubernetes-validate` package.

Kubernetes publishes an OpenAPI definition for every built-in type, with its field descriptions and the
`x-kubernetes-*` extensions that drive strategic merge patch (`x-kubernetes-patch-merge-key`,
`x-kubernetes-patch-strategy`), list semantics (`x-kubernetes-list-type`, `-list-map-keys`) and kind
identity (`x-kubernetes-group-version-kind`). `kubernetes-validate` ships them as JSON Schema; this module
loads the 1.32 set once and answers two questions: the definition named N, and the definition of a kind.

References inside definitions have the form `#/$defs/<name>`; `ref_name` turns one into a name.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import kubernetes_validate
import orjson

KUBERNETES_VERSION = "1.32.0"
_DEFINITIONS = (Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" /
                f"v{KUBERNETES_VERSION}-local" / "_definitions.json")
REF_PREFIX = "#/$defs/"


@functools.cache
def definitions() -> dict[str, dict[str, Any]]:
    """Every definition by its name, e.g. `io.k8s.api.apps.v1.Deployment` (loaded once, ~4 MB)."""
    return orjson.loads(_DEFINITIONS.read_bytes())["$defs"]  # type: ignore[no-any-return]


@functools.cache
def _by_kind() -> dict[tuple[str, str, str], str]:
    index = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            index[(gvk.get("group", ""), gvk["version"], gvk["kind"])] = name
    return index


def definition_name(group: str, version: str, kind: str) -> str | None:
    """The name of the definition of a kind, e.g. ("apps", "v1", "Deployment") → io.k8s.api.apps.v1.Deployment."""
    return _by_kind().get((group, version, kind))


def ref_name(ref: str) -> str:
    """`#/$defs/io.k8s.api.core.v1.PodSpec` → `io.k8s.api.core.v1.PodSpec`."""
    if not ref.startswith(REF_PREFIX):
        raise ValueError(f"not a definitions reference: {ref}")
    return ref[len(REF_PREFIX):]
