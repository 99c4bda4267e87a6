"""From a CustomResourceDefinition to the resources it makes the apiserver serve.

Each served version of a CRD becomes one `Resource`, named and scoped by `spec.names` and `spec.scope`,
with the `status` and `scale` subresources the version asks for and its `additionalPrinterColumns` for
Tables. All versions share one storage prefix, `/registry/<group>/<plural>/`, and objects are kept at the
version marked `storage: true`; serving them at another version is conversion strategy `None`: only
`apiVersion` changes.

Versions with a `scale` subresource carry its `ScalePaths` (`specReplicasPath`, `statusReplicasPath`,
`labelSelectorPath`).

A CRD is served under the names its status has accepted, not those its spec asks for. `naming_status` is
what kube's NamingConditionController and EstablishingController make of its status: within one API group
no two CRDs may share a resource name (plural, singular or short name) or a kind (kind or listKind). A
requested name another CRD of the group has already accepted is refused (`NamesAccepted` False with reason
`PluralConflict`, `SingularConflict`, `ShortNamesConflict`, `KindConflict` or `ListKindConflict` and the
message `"<name>" is already in use`) and the CRD keeps its previously accepted value for it. A CRD becomes
`Established` (and served) once all its names are accepted, and stays established if a later change of its
names conflicts; until then it is `Established` False, `NotAccepted`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .gofmt import go_quote
from .kinds import SCALE, STATUS, Resource, ScalePaths, Subresource

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
NAMES_ACCEPTED, ESTABLISHED = "NamesAccepted", "Established"


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


def _scale_paths(version: dict[str, Any]) -> ScalePaths | None:
    scale = (version.get("subresources") or {}).get("scale")
    if not isinstance(scale, dict):
        return None
    return ScalePaths(str(scale.get("specReplicasPath") or ""), str(scale.get("statusReplicasPath") or ""),
                      str(scale.get("labelSelectorPath") or ""))


def resources_for_crd(crd: dict[str, Any]) -> list[Resource]:
    """The resources to serve for `crd`, one per served version, under the names its status has accepted."""
    spec = _spec(crd)
    names, group = accepted_names(crd), str(spec.get("group", ""))
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
            storage_prefix=f"{group}/{_requested_names(crd).get('plural', '')}",
            storage_version="" if name == stored else f"{group}/{stored}",
            singular_name=str(names.get("singular") or ""),
            custom=True,
            printer_columns=_columns(version),
            scale_paths=_scale_paths(version),
        ))
    return found


def version_schema(crd: dict[str, Any], version: str) -> dict[str, Any]:
    """The `openAPIV3Schema` a CRD declares for one version ({} when it declares none)."""
    for declared in _spec(crd).get("versions") or []:
        if declared.get("name") == version:
            schema = (declared.get("schema") or {}).get("openAPIV3Schema")
            return schema if isinstance(schema, dict) else {}
    return {}


def group(crd: dict[str, Any]) -> str:
    """The API group the CRD's resources are served in."""
    return str(_spec(crd).get("group", ""))


def _requested_names(crd: dict[str, Any]) -> dict[str, Any]:
    names = _spec(crd).get("names")
    return names if isinstance(names, dict) else {}


def accepted_names(crd: dict[str, Any]) -> dict[str, Any]:
    names = (crd.get("status") or {}).get("acceptedNames")
    return names if isinstance(names, dict) else {}


def _condition(crd: dict[str, Any], condition_type: str) -> dict[str, Any] | None:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if isinstance(c, dict) and c.get("type") == condition_type), None)


def is_established(crd: dict[str, Any]) -> bool:
    """Whether the CRD's resources are served: its `Established` condition is True."""
    return (_condition(crd, ESTABLISHED) or {}).get("status") == "True"


def _names_in_use(others: Iterable[dict[str, Any]]) -> tuple[set[str], set[str]]:
    """The resource names (plural, singular, short names) and the kinds (kind, listKind) `others` accepted."""
    resources: set[str] = set()
    kinds: set[str] = set()
    for other in others:
        names = accepted_names(other)
        resources.update(str(n) for n in (names.get("plural"), names.get("singular"), *(names.get("shortNames") or []))
                         if n)
        kinds.update(str(n) for n in (names.get("kind"), names.get("listKind")) if n)
    return resources, kinds


def _taken(requested: Any, accepted: Any, in_use: set[str]) -> str:
    """Why `requested` cannot be had ("" if it can): another CRD has it and it is not already ours."""
    if requested == accepted or requested not in in_use:
        return ""
    return f"{go_quote(str(requested))} is already in use"


def _short_names_taken(requested: list[Any], accepted: list[Any], in_use: set[str]) -> str:
    """Why the short names cannot be had: each new one another CRD has, in one message as Go aggregates them."""
    problems = [_taken(name, "", in_use) for name in requested if name not in accepted]
    unique = list(dict.fromkeys(p for p in problems if p))
    if len(unique) > 1:
        return f"[{', '.join(unique)}]"
    return unique[0] if unique else ""


# the names kube checks, in its order, with the reason NamesAccepted gives when one is another CRD's
_CONFLICT_REASONS = {"plural": "PluralConflict", "singular": "SingularConflict", "shortNames": "ShortNamesConflict",
                     "kind": "KindConflict", "listKind": "ListKindConflict"}


def _accept(crd: dict[str, Any], others: Iterable[dict[str, Any]]) -> tuple[dict[str, Any], tuple[str, str] | None]:
    """The names `crd` may have next to `others`, and the last conflict found as (reason, message); a name
    that conflicts keeps its previously accepted value."""
    requested, accepted = _requested_names(crd), accepted_names(crd)
    resources, kinds = _names_in_use(others)
    names = dict(accepted)
    conflict = None
    for key, reason in _CONFLICT_REASONS.items():
        wanted, had = requested.get(key), accepted.get(key)
        in_use = kinds if key in ("kind", "listKind") else resources
        if key == "shortNames":
            problem = _short_names_taken(wanted or [], had or [], in_use)
        else:
            problem = _taken(wanted, had, in_use)
        if problem:
            conflict = (reason, problem)
        else:
            names[key] = wanted
    names["categories"] = requested.get("categories")
    return {k: v for k, v in names.items() if v or k in ("plural", "kind")}, conflict


def _set_condition(conditions: list[dict[str, Any]], new: dict[str, Any], now: str) -> list[dict[str, Any]]:
    """`conditions` with `new` in place of its type's condition; the transition time moves only when the
    status changes."""
    old = next((c for c in conditions if c.get("type") == new["type"]), None)
    if old is None:
        return [*conditions, {**new, "lastTransitionTime": now}]
    since = old.get("lastTransitionTime") if old.get("status") == new["status"] else None
    updated = {**old, **new, "lastTransitionTime": since or now}
    return [updated if c is old else c for c in conditions]


def _names_accepted(conflict: tuple[str, str] | None) -> dict[str, Any]:
    if conflict is None:
        return {"type": NAMES_ACCEPTED, "status": "True", "reason": "NoConflicts", "message": "no conflicts found"}
    return {"type": NAMES_ACCEPTED, "status": "False", "reason": conflict[0], "message": conflict[1]}


def _established(crd: dict[str, Any], conflict: tuple[str, str] | None) -> dict[str, Any]:
    """Once established a CRD stays so; it becomes established when all its names are accepted."""
    if is_established(crd) or conflict is not None:
        return _condition(crd, ESTABLISHED) or {"type": ESTABLISHED, "status": "False", "reason": "NotAccepted",
                                                "message": "not all names are accepted"}
    return {"type": ESTABLISHED, "status": "True", "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted"}


def naming_status(crd: dict[str, Any], others: Iterable[dict[str, Any]], now: str) -> dict[str, Any]:
    """The status of `crd` once its requested names are weighed against those `others` (the other CRDs of
    its group) have accepted: the names it may have, `NamesAccepted` (False, with the conflict, while any
    requested name is another's) and `Established` (True once all names were accepted, for good)."""
    names, conflict = _accept(crd, others)
    status = dict(crd.get("status") or {})
    conditions = _set_condition(list(status.get("conditions") or []), _names_accepted(conflict), now)
    conditions = _set_condition(conditions, _established(crd, conflict), now)
    stored, old_stored = storage_version(crd), list(status.get("storedVersions") or [])
    status.update(conditions=conditions, acceptedNames=names,
                  storedVersions=old_stored if stored in old_stored else [*old_stored, stored])
    return status
