"""ObjectMeta, labels, annotations, label selectors: the checks every kind shares.

`validate_object_meta` is apimachinery's `ValidateObjectMeta` plus core's extra finalizer rule; the name rule
of each kind is passed in (see `NAME_RULES` in the package). `validate_object_meta_update` covers what an
update may not do to metadata beyond the identity fields (name, namespace, uid, creationTimestamp), which the
registry compares itself. The selector helpers also answer "does this selector match these labels", which
workload validation needs to check a template against its selector.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import names
from minikube_py.api.errors import FieldError, forbidden, invalid, required
from minikube_py.api.validation.messages import (
    IMMUTABLE,
    GoValue,
    as_dict,
    as_list,
    dict_items,
    go_scalar,
    go_string_slice,
    go_struct,
    invalid_go,
    invalid_value,
    nonnegative,
    too_long,
)

STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_object_meta(meta: dict[str, Any], namespaced: bool, name_rule: names.NameRule,
                         path: str = "metadata", kube_finalizers: bool = True) -> list[FieldError]:
    """Validate `metadata` on create. `kube_finalizers` adds core's standard-finalizer-name rule."""
    errs: list[FieldError] = []
    generate_name = meta.get("generateName")
    if generate_name:
        errs += [invalid_value(f"{path}.generateName", generate_name, m) for m in name_rule(generate_name, True)]
    name = meta.get("name")
    if not name:
        # The registry turns generateName into a name before validating; accept either here.
        if not generate_name:
            errs.append(required(f"{path}.name", "name or generateName is required"))
    else:
        errs += [invalid_value(f"{path}.name", name, m) for m in name_rule(str(name), False)]
    errs += _namespace(meta.get("namespace"), namespaced, f"{path}.namespace")
    errs += nonnegative(f"{path}.generation", meta.get("generation"))
    errs += validate_common_meta(meta, path, kube_finalizers)
    return errs


def validate_object_meta_update(new: dict[str, Any], old: dict[str, Any], path: str = "metadata",
                                kube_finalizers: bool = True) -> list[FieldError]:
    errs: list[FieldError] = []
    if new.get("uid") != old.get("uid"):
        errs.append(invalid(f"{path}.uid", new.get("uid"), IMMUTABLE))
    if old.get("deletionTimestamp"):
        added = sorted(set(as_list(new.get("finalizers"))) - set(as_list(old.get("finalizers"))))
        if added:
            errs.append(forbidden(f"{path}.finalizers", "no new finalizers can be added if the object is being "
                                                        f"deleted, found new finalizers {go_string_slice(added)}"))
    if isinstance(new.get("generation"), int) and new["generation"] < (old.get("generation") or 0):
        errs.append(invalid(f"{path}.generation", new["generation"], "must not be decremented"))
    errs += validate_common_meta(new, path, kube_finalizers)
    return errs


def validate_common_meta(meta: dict[str, Any], path: str, kube_finalizers: bool) -> list[FieldError]:
    errs = validate_labels(meta.get("labels"), f"{path}.labels")
    errs += validate_annotations(meta.get("annotations"), f"{path}.annotations")
    errs += _owner_references(dict_items(meta.get("ownerReferences")), f"{path}.ownerReferences")
    errs += _finalizers(as_list(meta.get("finalizers")), f"{path}.finalizers", kube_finalizers)
    return errs


def _namespace(namespace: Any, namespaced: bool, path: str) -> list[FieldError]:
    if not namespaced:
        return [forbidden(path, "not allowed on this type")] if namespace else []
    if not namespace:
        return [required(path)]
    return [invalid_value(path, namespace, m) for m in names.name_is_dns_label(str(namespace))]


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key, value in as_dict(labels).items():
        errs += validate_label_name(key, path)
        errs += [invalid_value(path, value, m) for m in names.is_valid_label_value(str(value))]
    return errs


def validate_label_name(key: str, path: str) -> list[FieldError]:
    return [invalid_value(path, key, m) for m in names.is_qualified_name(key)]


def validate_annotations(annotations: Any, path: str) -> list[FieldError]:
    annotations = as_dict(annotations)
    errs = [invalid_value(path, k, m) for k in annotations for m in names.is_qualified_name(k.lower())]
    if names.annotations_size(annotations) > names.TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(too_long(path, names.TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def _owner_reference_repr(ref: dict[str, Any]) -> str:
    def pointer(key: str) -> GoValue:
        return GoValue("(*bool)(nil)" if ref.get(key) is None else f"(*bool)({go_scalar(ref[key])})")

    return go_struct("v1.OwnerReference", {
        "APIVersion": ref.get("apiVersion", ""), "Kind": ref.get("kind", ""), "Name": ref.get("name", ""),
        "UID": ref.get("uid", ""), "Controller": pointer("controller"),
        "BlockOwnerDeletion": pointer("blockOwnerDeletion")})


def _owner_references(refs: list[dict[str, Any]], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    first_controller = ""
    for ref in refs:
        api_version = str(ref.get("apiVersion") or "")
        version = api_version.rpartition("/")[2]
        if not version:
            errs.append(invalid_value(f"{path}.apiVersion", api_version, "version must not be empty"))
        for key in ("kind", "name", "uid"):
            if not ref.get(key):
                errs.append(invalid_value(f"{path}.{key}", ref.get(key) or "", f"{key} must not be empty"))
        if api_version == "v1" and ref.get("kind") == "Event":
            errs.append(invalid_go(path, _owner_reference_repr(ref), "/v1, Kind=Event is disallowed from being "
                                                                      "an owner"))
        if ref.get("controller") is True:
            current = f"{ref.get('kind', '')}/{ref.get('name', '')}"
            if first_controller:
                rendered = "[]v1.OwnerReference{" + ", ".join(_owner_reference_repr(r) for r in refs) + "}"
                errs.append(invalid_go(path, rendered, "Only one reference can have Controller set to true. Found "
                                                       f'"true" in references for {first_controller} and {current}'))
            else:
                first_controller = current
    return errs


def _finalizers(finalizers: list[Any], path: str, kube_finalizers: bool) -> list[FieldError]:
    errs = [invalid_value(path, f, m) for f in finalizers for m in names.is_qualified_name(str(f))]
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(invalid_go(path, go_string_slice([str(f) for f in finalizers]),
                               "finalizer orphan and foregroundDeletion cannot be both set"))
    if kube_finalizers:
        errs += [invalid_value(f"{path}[{i}]", f, "name is neither a standard finalizer name nor is it fully "
                                                  "qualified")
                 for i, f in enumerate(finalizers) if "/" not in str(f) and f not in STANDARD_FINALIZERS]
    return errs


def validate_label_selector(selector: Any, path: str) -> list[FieldError]:
    """`metav1.LabelSelector` syntax: label keys and values, operators and their value lists."""
    if not isinstance(selector, dict):
        return []
    errs = validate_labels(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, expr in enumerate(dict_items(selector.get("matchExpressions"))):
        errs += _requirement(expr, f"{path}.matchExpressions[{i}]")
    return errs


def _requirement(expr: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    operator, values = expr.get("operator"), as_list(expr.get("values"))
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(forbidden(f"{path}.values", "may not be specified when `operator` is 'Exists' or "
                                                    "'DoesNotExist'"))
    else:
        errs.append(invalid_value(f"{path}.operator", operator or "", "not a valid selector operator"))
    errs += validate_label_name(str(expr.get("key") or ""), f"{path}.key")
    for j, value in enumerate(values):
        errs += [invalid_value(f"{path}.values[{j}]", value, m) for m in names.is_valid_label_value(str(value))]
    return errs


def selector_is_valid(selector: dict[str, Any]) -> bool:
    """Whether kube can turn the selector into a `labels.Selector` (`LabelSelectorAsSelector` succeeds)."""
    for expr in dict_items(selector.get("matchExpressions")):
        operator, values = expr.get("operator"), as_list(expr.get("values"))
        if operator not in _SELECTOR_OPERATORS or (operator in ("In", "NotIn") and not values):
            return False
    return True


def selector_is_empty(selector: Any) -> bool:
    """A present selector with no requirements: it selects everything."""
    selector = as_dict(selector)
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def selector_matches(selector: Any, labels: Any) -> bool:
    """`LabelSelectorAsSelector(selector).Matches(labels)`; a missing selector matches nothing."""
    if not isinstance(selector, dict):
        return False
    labels = as_dict(labels)
    if any(labels.get(k) != v for k, v in as_dict(selector.get("matchLabels")).items()):
        return False
    for expr in dict_items(selector.get("matchExpressions")):
        key, operator, values = expr.get("key"), expr.get("operator"), as_list(expr.get("values"))
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True

