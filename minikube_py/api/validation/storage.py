"""StorageClasses (storage.k8s.io/v1): what a class may say, and that it never changes how it provisions.

A class names its `provisioner` (a qualified name such as `kubernetes.io/host-path`, checked in lower
case), opaque `parameters` for it (at most 512 entries and 256 KiB, no empty key), a `reclaimPolicy`
(Delete or Retain: Recycle is not offered for dynamic provisioning), a `volumeBindingMode` and, optionally,
the topologies its volumes may land in (`allowedTopologies`, no repeated key, value or term).

Volumes already provisioned copied the class's settings, so kube forbids changing the provisioner, the
parameters, the reclaim policy and the binding mode of an existing class; everything else (annotations such
as the default-class marker, `allowVolumeExpansion`, `mountOptions`) may change.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import names
from minikube_py.api.errors import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
)
from minikube_py.api.validation.messages import (
    as_dict,
    as_list,
    dict_items,
    go_scalar,
    immutable,
    invalid_value,
)
from minikube_py.api.validation.meta import validate_label_name

RECLAIM_POLICIES = ["Delete", "Retain"]
VOLUME_BINDING_MODES = ["Immediate", "WaitForFirstConsumer"]
MAX_PARAMETERS = 512
MAX_PARAMETERS_SIZE = 256 * 1024  # bytes of keys and values together


def storage_class(obj: dict[str, Any]) -> list[FieldError]:
    errs = _provisioner(obj.get("provisioner"))
    errs += _parameters(as_dict(obj.get("parameters")))
    policy = obj.get("reclaimPolicy")
    if policy and policy not in RECLAIM_POLICIES:
        errs.append(not_supported("reclaimPolicy", policy, RECLAIM_POLICIES))
    mode = obj.get("volumeBindingMode")
    if mode is None:
        errs.append(required("volumeBindingMode"))
    elif mode not in VOLUME_BINDING_MODES:
        errs.append(not_supported("volumeBindingMode", mode, VOLUME_BINDING_MODES))
    return errs + _allowed_topologies(dict_items(obj.get("allowedTopologies")))


def storage_class_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = storage_class(new)
    if as_dict(new.get("parameters")) != as_dict(old.get("parameters")):
        errs.append(forbidden("parameters", "updates to parameters are forbidden."))
    if new.get("provisioner") != old.get("provisioner"):
        errs.append(forbidden("provisioner", "updates to provisioner are forbidden."))
    if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
        errs.append(forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
    mode = new.get("volumeBindingMode")
    return errs + immutable("volumeBindingMode", mode, old.get("volumeBindingMode"), go_scalar(mode))


def _provisioner(provisioner: Any) -> list[FieldError]:
    if not provisioner:
        return [required("provisioner")]
    lowered = str(provisioner).lower()
    return [invalid_value("provisioner", lowered, m) for m in names.is_qualified_name(lowered)]


def _parameters(parameters: dict[str, Any]) -> list[FieldError]:
    if len(parameters) > MAX_PARAMETERS:
        return [too_long("parameters", MAX_PARAMETERS)]
    errs = [invalid("parameters", "", "field can not be empty.") for key in parameters if not key]
    if sum(len(key) + len(str(value)) for key, value in parameters.items()) > MAX_PARAMETERS_SIZE:
        errs.append(too_long("parameters", MAX_PARAMETERS_SIZE))
    return errs


def _allowed_topologies(terms: list[dict[str, Any]]) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: list[dict[str, set[str]]] = []
    for i, term in enumerate(terms):
        at = f"allowedTopologies[{i}]"
        requirements, term_errs = _topology_term(
            dict_items(term.get("matchLabelExpressions")), f"{at}.matchLabelExpressions"
        )
        errs += term_errs
        # kube compares a term with the earlier ones in a list that starts out holding empty terms: so an empty
        # term always counts as a repeat.
        if not requirements or requirements in seen:
            errs.append(duplicate(f"{at}.matchLabelExpressions", ""))
        seen.append(requirements)
    return errs


def _topology_term(
    expressions: list[dict[str, Any]], path: str
) -> tuple[dict[str, set[str]], list[FieldError]]:
    """The term's requirements as key → allowed values, and what is wrong with them."""
    errs: list[FieldError] = []
    requirements: dict[str, set[str]] = {}
    for i, expression in enumerate(expressions):
        at = f"{path}[{i}]"
        key, values = str(expression.get("key") or ""), [str(v) for v in as_list(expression.get("values"))]
        if not values:
            errs.append(required(f"{at}.values"))
        errs += [
            duplicate(f"{at}.values[{j}]", value) for j, value in enumerate(values) if value in values[:j]
        ]
        errs += validate_label_name(key, f"{at}.key")
        if key in requirements:
            errs.append(duplicate(f"{at}.key", key))
        requirements[key] = set(values)
    return requirements, errs
