"""From a CustomResourceDefinition to the resources it makes the apiserver serve.

Each served version of a CRD becomes one `Resource`, named and scoped by `spec.names` and `spec.scope`,
with the `status` and `scale` subresources the version asks for and its `additionalPrinterColumns` for
Tables. All versions share one storage prefix, `/registry/<group>/<plural>/`, and objects are kept at the
version marked `storage: true`; serving them at another version is conversion strategy `None`: only
`apiVersion` changes.

`accepted_status` is what the apiserver records once it serves a CRD: the `NamesAccepted` and
`Established` conditions and the accepted names.
"""

from __future__ import annotations

from typing import Any

from .kinds import SCALE, STATUS, Resource, Subresource

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def _spec(crd: dict[str, Any]) -> dict[str, Any]:
    spec = crd.get("spec")
    return spec if isinstance(spec, dict) else {}


def storage_version(crd: dict[str, Any]) -> str:
    for version in _spec(crd).get("versions") or []:
        if version.get("storage"):
            return str(version.get("name", ""))
    return ""


def _columns(version: dict[str, Any]) -> tuple[tuple[str, str, str, str, int, str], ...]:
    return tuple((str(c.get("name", "")), str(c.get("type", "string")), str(c.get("format", "")),
                  str(c.get("description", "")), int(c.get("priority", 0) or 0), str(c.get("jsonPath", "")))
                 for c in version.get("additionalPrinterColumns") or [])


def _subresources(kind: str, version: dict[str, Any]) -> tuple[Subresource, ...]:
    declared = version.get("subresources") or {}
    subs: tuple[Subresource, ...] = ()
    if "status" in declared:
        subs += (Subresource(STATUS, kind),)
    if "scale" in declared:
        subs += (SCALE,)
    return subs


def resources_for_crd(crd: dict[str, Any]) -> list[Resource]:
    """The resources to serve for `crd`, one per served version."""
    spec = _spec(crd)
    names, group = spec.get("names") or {}, str(spec.get("group", ""))
    stored = storage_version(crd)
    found = []
    for version in spec.get("versions") or []:
        if not version.get("served"):
            continue
        name = str(version.get("name", ""))
        found.append(Resource(
            group, name, str(names.get("kind", "")), str(names.get("plural", "")),
            namespaced=spec.get("scope") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            subresources=_subresources(str(names.get("kind", "")), version),
            storage_prefix=f"{group}/{names.get('plural', '')}",
            storage_version="" if name == stored else f"{group}/{stored}",
            singular_name=str(names.get("singular") or ""),
            custom=True,
            printer_columns=_columns(version),
        ))
    return found


def version_schema(crd: dict[str, Any], version: str) -> dict[str, Any]:
    """The `openAPIV3Schema` a CRD declares for one version ({} when it declares none)."""
    for declared in _spec(crd).get("versions") or []:
        if declared.get("name") == version:
            schema = (declared.get("schema") or {}).get("openAPIV3Schema")
            return schema if isinstance(schema, dict) else {}
    return {}


def accepted_status(crd: dict[str, Any], now: str) -> dict[str, Any]:
    """The status of a CRD whose names were accepted and whose resources are now served."""
    names = _spec(crd).get("names") or {}
    accepted = {k: v for k, v in names.items() if k in ("plural", "singular", "kind", "listKind", "shortNames",
                                                         "categories")}
    accepted.setdefault("listKind", f"{names.get('kind', '')}List")
    accepted.setdefault("singular", str(names.get("kind", "")).lower())
    stored = storage_version(crd)
    old_stored = ((crd.get("status") or {}).get("storedVersions")) or []
    return {
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now, "reason": "NoConflicts",
             "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now,
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
        ],
        "acceptedNames": accepted,
        "storedVersions": old_stored if stored in old_stored else [*old_stored, stored],
    }
