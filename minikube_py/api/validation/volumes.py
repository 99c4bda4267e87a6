"""Volumes: the volumes of a PodSpec, PersistentVolumes and PersistentVolumeClaims.

A volume (or a PV) must name exactly one source; kube reports each extra source as Forbidden and a missing
one as Required. Only the sources a small cluster uses are checked in depth (emptyDir, hostPath, secret,
configMap, persistentVolumeClaim, nfs, downwardAPI, projected, csi, ephemeral, local); the cloud ones are
accepted as given. Claims are immutable after creation except for what kube lets a user resize.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minikube_py.api import names
from minikube_py.api.defaults.pod import volume_sources
from minikube_py.api.errors import FieldError, duplicate, forbidden, invalid, not_supported, required
from minikube_py.api.storage import BETA_STORAGE_CLASS_ANNOTATION
from minikube_py.api.validation.containers import local_descending_path
from minikube_py.api.validation.messages import (
    GoValue,
    as_dict,
    as_list,
    dict_items,
    diff,
    invalid_value,
    semantic,
)
from minikube_py.api.validation.meta import validate_label_selector
from minikube_py.api.validation.quantity import QuantityError, canonical, parse_quantity

ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
_HOST_PATH_TYPES = ["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate",
                    "Socket"]
_PV_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd", "quobyte",
               "iscsi", "cinder", "cephfs", "fc", "flocker", "flexVolume", "azureFile", "vsphereVolume", "azureDisk",
               "photonPersistentDisk", "portworxVolume", "scaleIO", "local", "storageos", "csi")
_FILE_MODE_ERROR = "must be a number between 0 and 0777 (octal), both inclusive"
# kube's own typo, kept so the paths in messages match.
_FORBIDDEN_PATH = {"downwardAPI": "downwarAPI", "cephfs": "cephFS"}


def pod_volumes(volumes: list[dict[str, Any]], path: str) -> tuple[set[str], list[FieldError]]:
    """Validate `spec.volumes`; also returns the names that volume mounts may refer to."""
    errs: list[FieldError] = []
    known: set[str] = set()
    for i, volume in enumerate(volumes):
        at = f"{path}[{i}]"
        found = _volume_source(volume, at)
        name = volume.get("name")
        if not name:
            found.append(required(f"{at}.name"))
        else:
            found += [invalid_value(f"{at}.name", name, m) for m in names.is_dns1123_label(str(name))]
        if name in known:
            found.append(duplicate(f"{at}.name", name))
        if found:
            errs += found
        else:
            known.add(str(name))
    return known, errs


def _one_source(sources: list[str], path: str) -> list[FieldError]:
    if not sources:
        return [required(path, "must specify a volume type")]
    return [forbidden(f"{path}.{_FORBIDDEN_PATH.get(s, s)}", "may not specify more than 1 volume type")
            for s in sources[1:]]


def _volume_source(volume: dict[str, Any], path: str) -> list[FieldError]:
    sources = volume_sources(volume)
    errs = _one_source(sources, path)
    if not sources:
        return errs
    kind = sources[0]
    source, at = as_dict(volume.get(kind)), f"{path}.{kind}"
    checker = _SOURCE_CHECKS.get(kind)
    return errs + (checker(source, at) if checker else [])


def _empty_dir(source: dict[str, Any], path: str) -> list[FieldError]:
    limit = source.get("sizeLimit")
    try:
        negative = limit is not None and parse_quantity(limit) < 0
    except QuantityError:
        negative = True
    return [forbidden(f"{path}.sizeLimit", "SizeLimit field must be a valid resource quantity")] if negative else []


def _host_path(source: dict[str, Any], path: str) -> list[FieldError]:
    target = source.get("path")
    if not target:
        return [required(f"{path}.path")]
    errs: list[FieldError] = []
    if ".." in str(target).replace("\\", "/").split("/"):
        errs.append(invalid_value(f"{path}.path", target, "must not contain '..'"))
    kind = source.get("type")
    if kind is not None and kind not in _HOST_PATH_TYPES:
        errs.append(not_supported(f"{path}.type", kind, _HOST_PATH_TYPES))
    return errs


def _file_mode(value: Any, path: str) -> list[FieldError]:
    if value is None or (isinstance(value, int) and 0 <= value <= 0o777):
        return []
    return [invalid(path, value, _FILE_MODE_ERROR)]


def _key_to_paths(items: list[dict[str, Any]], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        at = f"{path}[{i}]"
        if not item.get("key"):
            errs.append(required(f"{at}.key"))
        if not item.get("path"):
            errs.append(required(f"{at}.path"))
        else:
            errs += local_descending_path(str(item["path"]), f"{at}.path")
        errs += _file_mode(item.get("mode"), f"{at}.mode")
    return errs


def _named(key: str) -> Callable[[dict[str, Any], str], list[FieldError]]:
    def check(source: dict[str, Any], path: str) -> list[FieldError]:
        errs = [] if source.get(key) else [required(f"{path}.{key}")]
        errs += _file_mode(source.get("defaultMode"), f"{path}.defaultMode")
        return errs + _key_to_paths(dict_items(source.get("items")), f"{path}.items")
    return check


def _claim(source: dict[str, Any], path: str) -> list[FieldError]:
    return [] if source.get("claimName") else [required(f"{path}.claimName")]


def _nfs(source: dict[str, Any], path: str) -> list[FieldError]:
    errs = [] if source.get("server") else [required(f"{path}.server")]
    target = source.get("path")
    if not target:
        errs.append(required(f"{path}.path"))
    elif not str(target).startswith("/"):
        errs.append(invalid_value(f"{path}.path", target, "must be an absolute path"))
    return errs


def _projected(source: dict[str, Any], path: str) -> list[FieldError]:
    errs = _file_mode(source.get("defaultMode"), f"{path}.defaultMode")
    for i, projection in enumerate(dict_items(source.get("sources"))):
        token = projection.get("serviceAccountToken")
        if isinstance(token, dict):
            at = f"{path}.sources[{i}].serviceAccountToken"
            seconds = token.get("expirationSeconds")
            if isinstance(seconds, int) and seconds < 600:
                errs.append(invalid(f"{at}.expirationSeconds", seconds, "may not specify a duration less than 10 "
                                                                        "minutes"))
            if isinstance(seconds, int) and seconds > 2**32:
                errs.append(invalid(f"{at}.expirationSeconds", seconds, "may not specify a duration larger than "
                                                                        "2^32 seconds"))
            if not token.get("path"):
                errs.append(required(f"{at}.path"))
    return errs


def _csi(source: dict[str, Any], path: str) -> list[FieldError]:
    return [] if source.get("driver") else [required(f"{path}.driver")]


def _ephemeral(source: dict[str, Any], path: str) -> list[FieldError]:
    template = source.get("volumeClaimTemplate")
    if not isinstance(template, dict):
        return [required(f"{path}.volumeClaimTemplate")]
    return claim_spec(as_dict(template.get("spec")), f"{path}.volumeClaimTemplate.spec")


_SOURCE_CHECKS = {
    "emptyDir": _empty_dir, "hostPath": _host_path, "secret": _named("secretName"), "configMap": _named("name"),
    "persistentVolumeClaim": _claim, "nfs": _nfs, "projected": _projected, "csi": _csi, "ephemeral": _ephemeral,
}


def claim_spec(spec: dict[str, Any], path: str) -> list[FieldError]:
    """`ValidatePersistentVolumeClaimSpec`, for claims and for the claim templates of ephemeral volumes."""
    errs = _access_modes(as_list(spec.get("accessModes")), f"{path}.accessModes",
                         "at least 1 access mode is required")
    errs += validate_label_selector(spec.get("selector"), f"{path}.selector")
    storage = as_dict(as_dict(spec.get("resources")).get("requests")).get("storage")
    # kube keys the storage request on `resources`, not on `resources.requests`.
    at = f"{path}.resources[storage]"
    if storage is None:
        errs.append(required(at))
    else:
        errs += _positive_quantity(storage, at)
    errs += _class_and_mode(spec, path)
    return errs


def _access_modes(modes: list[Any], path: str, missing: str) -> list[FieldError]:
    errs = [] if modes else [required(path, missing)]
    errs += [not_supported(path, m, ACCESS_MODES) for m in modes if m not in ACCESS_MODES]
    if "ReadWriteOncePod" in modes and any(m in ACCESS_MODES and m != "ReadWriteOncePod" for m in modes):
        errs.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errs


def _positive_quantity(value: Any, path: str) -> list[FieldError]:
    try:
        amount = parse_quantity(value)
    except QuantityError as exc:
        return [invalid_value(path, str(value), str(exc))]
    return [] if amount > 0 else [invalid_value(path, canonical(value), "must be greater than zero")]


def _class_and_mode(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    class_name = spec.get("storageClassName")
    if class_name:
        errs += [invalid_value(f"{path}.storageClassName", class_name, m)
                 for m in names.is_dns1123_subdomain(str(class_name))]
    mode = spec.get("volumeMode")
    if mode is not None and mode not in ("Block", "Filesystem"):
        errs.append(not_supported(f"{path}.volumeMode", mode, ["Block", "Filesystem"]))
    return errs


def claim_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """`ValidatePersistentVolumeClaimUpdate`: the spec is fixed at creation, but for what kube lets change.

    The PV controller may set `volumeName` once; a class may be named where none was (the default class
    given retroactively, or the legacy annotation's class moved into the spec); a Bound claim may change its
    storage request and its attributes class. Shrinking is refused down to `status.capacity` only
    (RecoverVolumeExpansionFailure, on in 1.32, lets a user back out of an expansion that failed). Whether a
    claim may grow is the PersistentVolumeClaimResize admission plugin's call.
    """
    errs = claim_spec(as_dict(new.get("spec")), "spec")
    new_spec, old_spec = dict(as_dict(new.get("spec"))), dict(as_dict(old.get("spec")))
    if not old_spec.get("volumeName"):
        old_spec["volumeName"] = new_spec.get("volumeName")
    errs += _class_change(new, old, new_spec)
    if as_dict(new.get("status")).get("phase") == "Bound":
        _ignore_bound_changes(new_spec, old_spec)
    if semantic(new_spec) != semantic(old_spec):
        changes = "\n".join(diff(semantic(old_spec), semantic(new_spec), "spec"))
        errs.append(forbidden("spec", "spec is immutable after creation except resources.requests and "
                                      f"volumeAttributesClassName for bound claims\n{changes}"))
    errs += _shrink(new, old)
    if new_spec.get("volumeMode") != old_spec.get("volumeMode"):
        errs.append(invalid_value("volumeMode", new_spec.get("volumeMode"), "field is immutable"))
    return errs


def _class_change(new: dict[str, Any], old: dict[str, Any], new_spec: dict[str, Any]) -> list[FieldError]:
    """Forgive, in `new_spec`, a `storageClassName` set where the old claim had none, when that is allowed:
    to the class the legacy annotation named (the annotation then kept or dropped), or to any class on a
    claim without the annotation. Otherwise the annotation itself may not change."""
    old_annotations = as_dict(as_dict(old.get("metadata")).get("annotations"))
    new_annotations = as_dict(as_dict(new.get("metadata")).get("annotations"))
    old_class, new_class = as_dict(old.get("spec")).get("storageClassName"), new_spec.get("storageClassName")
    if old_class is not None or new_class is None:
        named_where_none_was = from_annotation = False
    else:
        annotated = BETA_STORAGE_CLASS_ANNOTATION in old_annotations
        named_where_none_was = not annotated or new_class == old_annotations[BETA_STORAGE_CLASS_ANNOTATION]
        from_annotation = annotated and named_where_none_was and new_annotations.get(
            BETA_STORAGE_CLASS_ANNOTATION, new_class) == new_class
    errs: list[FieldError] = []
    if not from_annotation and new_annotations.get(BETA_STORAGE_CLASS_ANNOTATION, "") != old_annotations.get(
            BETA_STORAGE_CLASS_ANNOTATION, ""):
        errs.append(invalid_value(f"metadata.annotations.{BETA_STORAGE_CLASS_ANNOTATION}",
                                  str(new_annotations.get(BETA_STORAGE_CLASS_ANNOTATION, "")), "field is immutable"))
    if named_where_none_was:
        new_spec["storageClassName"] = None
    return errs


def _ignore_bound_changes(new_spec: dict[str, Any], old_spec: dict[str, Any]) -> None:
    """Take, into `new_spec`, the old storage request (when the new spec has requests at all) and the old
    attributes class (when the new spec names one): a Bound claim may change those."""
    resources = as_dict(new_spec.get("resources"))
    if isinstance(resources.get("requests"), dict):
        storage = as_dict(as_dict(old_spec.get("resources")).get("requests")).get("storage")
        new_spec["resources"] = {**resources, "requests": {**resources["requests"], "storage": storage}}
    if new_spec.get("volumeAttributesClassName") is not None:
        new_spec["volumeAttributesClassName"] = old_spec.get("volumeAttributesClassName")


def _storage(obj: dict[str, Any], *keys: str) -> Any:
    value: Any = obj
    for key in keys:
        value = as_dict(value).get(key)
    try:
        return parse_quantity(value) if value is not None else 0
    except QuantityError:
        return 0


def _shrink(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    size, previous = _storage(new, "spec", "resources", "requests", "storage"), _storage(
        old, "spec", "resources", "requests", "storage")
    # RecoverVolumeExpansionFailure (beta, on, in 1.32) lets a failed expansion be undone down to the real size;
    # without it kube would say "field can not be less than previous value" to any shrink.
    if size < previous and size <= _storage(old, "status", "capacity", "storage"):
        return [forbidden("spec.resources.requests.storage", "field can not be less than status.capacity")]
    return []


def persistent_volume(pv: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(pv.get("spec"))
    errs = _access_modes(as_list(spec.get("accessModes")), "spec.accessModes", "")
    capacity = as_dict(spec.get("capacity"))
    if not capacity:
        errs.append(required("spec.capacity"))
    if "storage" not in capacity or len(capacity) > 1:
        shown = ", ".join(f'"{k}":"{v}"' for k, v in capacity.items())
        errs.append(FieldError("FieldValueNotSupported", "spec.capacity", f"Unsupported value: core.ResourceList{{"
                                                                          f'{shown}}}: supported values: "storage"'))
    for name, quantity in capacity.items():
        errs += _positive_quantity(quantity, f"spec.capacity[{name}]")
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in ("Delete", "Recycle", "Retain"):
        errs.append(not_supported("spec.persistentVolumeReclaimPolicy", policy, ["Delete", "Recycle", "Retain"]))
    errs += _class_and_mode(spec, "spec")
    sources = [key for key in _PV_SOURCES if spec.get(key) is not None]
    errs += _one_source(sources, "spec")
    if "hostPath" in sources[:1]:
        errs += _host_path(as_dict(spec["hostPath"]), "spec.hostPath")
    if "local" in sources[:1] and spec.get("nodeAffinity") is None:
        errs.append(required("spec.nodeAffinity", "Local volume requires node affinity"))
    return errs


def persistent_volume_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = persistent_volume(new)
    new_spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    new_source = semantic({k: new_spec.get(k) for k in _PV_SOURCES})
    old_source = semantic({k: old_spec.get(k) for k in _PV_SOURCES})
    if new_source != old_source:
        changes = "\n".join(diff(old_source, new_source, "spec"))
        errs.append(forbidden("spec.persistentvolumesource", "spec.persistentvolumesource is immutable after "
                                                             f"creation\n{changes}"))
    if new_spec.get("volumeMode") != old_spec.get("volumeMode"):
        errs.append(invalid_value("volumeMode", new_spec.get("volumeMode"), "field is immutable"))
    if old_spec.get("nodeAffinity") is not None and semantic(new_spec.get("nodeAffinity")) != semantic(
            old_spec.get("nodeAffinity")):
        errs.append(invalid_value("nodeAffinity", GoValue("core.VolumeNodeAffinity{...}"), "field is immutable"))
    return errs


def persistent_volume_claim(pvc: dict[str, Any]) -> list[FieldError]:
    return claim_spec(as_dict(pvc.get("spec")), "spec")
