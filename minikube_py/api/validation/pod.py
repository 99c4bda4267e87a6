"""PodSpec validation for Pods and pod templates, and what a Pod update may change.

`pod_spec` is kube's `ValidatePodSpec`; `is_pod` switches on the few rules that only hold for a real Pod
(under `hostNetwork` a Pod's hostPort must equal its containerPort, while a template may leave it 0 for the
Pod's defaulting to fill). `pod_template` validates the `template` of every workload. `pod_update` enforces
kube's famous rule that a Pod's spec is frozen except for images, `activeDeadlineSeconds`, added tolerations,
removed scheduling gates and one `terminationGracePeriodSeconds` fix-up. `pod_annotation_updates` is kube's
`ValidatePodSpecificAnnotationUpdates`: the mirror-pod and AppArmor annotations a kubelet relies on may not be
added, changed or removed by any Pod update, status writes included (see `pod_status`).
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import names
from minikube_py.api.errors import FieldError, duplicate, forbidden, invalid, not_supported, required
from minikube_py.api.validation import scheduling, volumes
from minikube_py.api.validation.containers import container_common, probes_and_hooks
from minikube_py.api.validation.messages import (
    as_dict,
    as_int,
    as_list,
    dict_items,
    diff,
    invalid_value,
    semantic,
)
from minikube_py.api.validation.meta import validate_annotations, validate_labels

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
_APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
_MAX_INT32 = 2**31 - 1
_RESTART_POLICIES = ["Always", "OnFailure", "Never"]
_DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
_UPDATABLE_POD_FIELDS = ",".join([
    "`spec.containers[*].image`", "`spec.initContainers[*].image`", "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
])


def pod_spec(spec: dict[str, Any], path: str, is_pod: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is None:
        errs.append(required(f"{path}.terminationGracePeriodSeconds"))
    volume_names, volume_errs = volumes.pod_volumes(dict_items(spec.get("volumes")), f"{path}.volumes")
    errs += volume_errs
    errs += _containers(spec, volume_names, path, grace)
    errs += _init_containers(spec, volume_names, path, grace)
    errs += _host_network_ports(spec, path, is_pod)
    errs += _enum(spec.get("restartPolicy"), f"{path}.restartPolicy", _RESTART_POLICIES)
    errs += _enum(spec.get("dnsPolicy"), f"{path}.dnsPolicy", _DNS_POLICIES)
    errs += validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector")
    errs += _pod_security_context(as_dict(spec.get("securityContext")), f"{path}.securityContext")
    for i, secret in enumerate(as_list(spec.get("imagePullSecrets"))):
        if not isinstance(secret, dict) or set(secret) - {"name"}:
            errs.append(invalid_value(f"{path}.imagePullSecrets[{i}]", str(secret), "only name may be set"))
    errs += scheduling.affinity(as_dict(spec.get("affinity")), f"{path}.affinity")
    errs += _dns_config(spec, f"{path}.dnsConfig")
    errs += scheduling.gates_and_spread(spec, path)
    errs += _names_and_numbers(spec, path)
    errs += scheduling.tolerations(dict_items(spec.get("tolerations")), f"{path}.tolerations")
    for i, alias in enumerate(dict_items(spec.get("hostAliases"))):
        for j, hostname in enumerate(as_list(alias.get("hostnames"))):
            errs += [invalid_value(f"{path}.hostAliases[{i}].hostnames[{j}]", hostname, m)
                     for m in names.is_dns1123_subdomain(str(hostname))]
    return errs


def _enum(value: Any, path: str, supported: list[str]) -> list[FieldError]:
    if not value:
        return [required(path)]
    return [] if value in supported else [not_supported(path, value, supported)]


def _containers(spec: dict[str, Any], volume_names: set[str], path: str, grace: Any) -> list[FieldError]:
    containers = dict_items(spec.get("containers"))
    if not containers:
        return [required(f"{path}.containers")]
    errs: list[FieldError] = []
    seen: set[Any] = set()
    for i, ctr in enumerate(containers):
        at = f"{path}.containers[{i}]"
        errs += container_common(ctr, volume_names, at)
        if ctr.get("name") in seen:
            errs.append(duplicate(f"{at}.name", ctr.get("name")))
        seen.add(ctr.get("name"))
        errs += probes_and_hooks(ctr, at, grace)
        if ctr.get("restartPolicy") is not None:
            errs.append(forbidden(f"{at}.restartPolicy", "may not be set for non-init containers"))
    return errs + _host_port_conflicts(containers, f"{path}.containers")


def _init_containers(spec: dict[str, Any], volume_names: set[str], path: str, grace: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    seen = {c.get("name") for c in dict_items(spec.get("containers"))}
    for i, ctr in enumerate(dict_items(spec.get("initContainers"))):
        at = f"{path}.initContainers[{i}]"
        errs += container_common(ctr, volume_names, at)
        policy = ctr.get("restartPolicy")
        if policy is not None and policy != "Always":
            errs.append(not_supported(f"{at}.restartPolicy", policy, ["Always"]))
        if ctr.get("name") in seen:
            errs.append(duplicate(f"{at}.name", ctr.get("name")))
        elif ctr.get("name"):
            seen.add(ctr.get("name"))
        errs += _host_port_conflicts([ctr], f"{path}.initContainers")
        if policy == "Always":
            errs += probes_and_hooks(ctr, at, grace)
            continue
        for key in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
            if ctr.get(key) is not None:
                errs.append(forbidden(f"{at}.{key}", "may not be set for init containers without restartPolicy=Always"))
    return errs


def _host_port_conflicts(containers: list[dict[str, Any]], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, ctr in enumerate(containers):
        for j, port in enumerate(dict_items(ctr.get("ports"))):
            host_port = as_int(port.get("hostPort"))
            if not host_port:
                continue
            key = f"{port.get('protocol', '')}/{port.get('hostIP', '')}/{host_port}"
            if key in seen:
                errs.append(duplicate(f"{path}[{i}].ports[{j}].hostPort", key))
            seen.add(key)
    return errs


def _host_network_ports(spec: dict[str, Any], path: str, is_pod: bool) -> list[FieldError]:
    if as_dict(spec).get("hostNetwork") is not True:
        return []
    errs: list[FieldError] = []
    for i, ctr in enumerate(dict_items(spec.get("containers"))):
        for j, port in enumerate(dict_items(ctr.get("ports"))):
            host_port, container_port = as_int(port.get("hostPort")), as_int(port.get("containerPort"))
            if (is_pod or host_port != 0) and host_port != container_port:
                errs.append(invalid(f"{path}.containers[{i}].ports[{j}].hostPort", host_port,
                                    "must match `containerPort` when `hostNetwork` is true"))
    return errs


def _pod_security_context(context: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("runAsUser", "runAsGroup", "fsGroup"):
        value = context.get(key)
        if isinstance(value, int) and not 0 <= value <= _MAX_INT32:
            errs.append(invalid(f"{path}.{key}", value, names.inclusive_range_error(0, _MAX_INT32)))
    for i, group in enumerate(as_list(context.get("supplementalGroups"))):
        if isinstance(group, int) and not 0 <= group <= _MAX_INT32:
            errs.append(invalid(f"{path}.supplementalGroups[{i}]", group, names.inclusive_range_error(0, _MAX_INT32)))
    return errs


def _dns_config(spec: dict[str, Any], path: str) -> list[FieldError]:
    config = spec.get("dnsConfig")
    if spec.get("dnsPolicy") == "None":
        if not isinstance(config, dict):
            return [required(path, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not as_list(config.get("nameservers")):
            return [required(f"{path}.nameservers", "must provide at least one DNS nameserver when `dnsPolicy` "
                                                    "is None")]
    errs: list[FieldError] = []
    config = as_dict(config)
    if len(as_list(config.get("nameservers"))) > 3:
        errs.append(invalid_value(f"{path}.nameservers", str(config["nameservers"]),
                                  "must not have more than 3 nameservers"))
    for i, option in enumerate(dict_items(config.get("options"))):
        if not option.get("name"):
            errs.append(required(f"{path}.options[{i}]", "must not be empty"))
    return errs


def _names_and_numbers(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key, rule in (("serviceAccountName", names.is_dns1123_subdomain), ("nodeName", names.is_dns1123_subdomain)):
        if spec.get(key):
            errs += [invalid_value(f"{path}.{key}", spec[key], m) for m in rule(str(spec[key]))]
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not 1 <= deadline <= _MAX_INT32:
        errs.append(invalid(f"{path}.activeDeadlineSeconds", deadline, names.inclusive_range_error(1, _MAX_INT32)))
    for key in ("hostname", "subdomain"):
        if spec.get(key):
            errs += [invalid_value(f"{path}.{key}", spec[key], m) for m in names.is_dns1123_label(str(spec[key]))]
    for key in ("priorityClassName", "runtimeClassName"):
        if spec.get(key):
            errs += [invalid_value(f"{path}.{key}", spec[key], m) for m in names.is_dns1123_subdomain(str(spec[key]))]
    if "preemptionPolicy" in spec and spec["preemptionPolicy"] is not None:
        errs += _enum(spec["preemptionPolicy"], f"{path}.preemptionPolicy", ["PreemptLowerPriority", "Never"])
    os_name = as_dict(spec.get("os")).get("name")
    if spec.get("os") is not None and os_name not in ("linux", "windows"):
        errs.append(not_supported(f"{path}.os.name", os_name or "", ["linux", "windows"]))
    return errs


def pod_template_metadata(template: dict[str, Any], path: str) -> list[FieldError]:
    """The template's labels and annotations (at `<path>.labels`, as kube says)."""
    metadata = as_dict(template.get("metadata"))
    return (validate_labels(metadata.get("labels"), f"{path}.labels")
            + validate_annotations(metadata.get("annotations"), f"{path}.annotations"))


def pod_template(template: dict[str, Any], path: str) -> list[FieldError]:
    """`ValidatePodTemplateSpec`: template labels and annotations, and spec."""
    errs = pod_template_metadata(template, path)
    spec = as_dict(template.get("spec"))
    errs += pod_spec(spec, f"{path}.spec", is_pod=False)
    if as_list(spec.get("ephemeralContainers")):
        errs.append(forbidden(f"{path}.spec.ephemeralContainers", "ephemeral containers not allowed in pod template"))
    return errs


def _pod_metadata_and_spec(pod: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(pod.get("spec"))
    errs = pod_spec(spec, "spec", is_pod=True)
    for key in ("containers", "initContainers"):
        for i, ctr in enumerate(dict_items(spec.get(key))):
            image = ctr.get("image")
            if isinstance(image, str) and image != image.strip():
                errs.append(invalid_value(f"spec.{key}[{i}].image", image, "must not have leading or trailing "
                                                                           "whitespace"))
    return errs


def pod_create(pod: dict[str, Any]) -> list[FieldError]:
    errs = _pod_metadata_and_spec(pod)
    spec = as_dict(pod.get("spec"))
    if as_list(spec.get("ephemeralContainers")):
        errs.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
    if spec.get("nodeName") and as_list(spec.get("schedulingGates")):
        errs.append(forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared"))
    return errs


def pod_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = _pod_metadata_and_spec(new) + pod_annotation_updates(new, old)
    new_spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    for key in ("containers", "initContainers"):
        if len(as_list(new_spec.get(key))) != len(as_list(old_spec.get(key))):
            return errs + [forbidden(f"spec.{key}", "pod updates may not add or remove containers")]
    errs += _active_deadline_update(new_spec, old_spec)
    errs += scheduling.only_added_tolerations(new_spec, old_spec)
    errs += scheduling.only_removed_gates(new_spec, old_spec)
    munged, before = semantic(_munge(new_spec, old_spec)), semantic(old_spec)
    if munged != before:
        changes = "\n".join(diff(before, munged, "spec"))
        errs.append(forbidden("spec", f"pod updates may not change fields other than {_UPDATABLE_POD_FIELDS}\n"
                                      f"{changes}"))
    return errs


def _active_deadline_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    value, previous = new.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds")
    if value is None:
        if previous is not None:
            return [invalid("spec.activeDeadlineSeconds", None, "must not update from a positive integer to nil "
                                                                "value")]
        return []
    if previous is not None and isinstance(value, int) and previous < value:
        return [invalid("spec.activeDeadlineSeconds", value, "must be less than or equal to previous value")]
    return []


def _munge(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """The new spec with every field a Pod update may change put back to its old value."""
    munged = dict(new)
    for key in ("containers", "initContainers"):
        if key in munged:
            munged[key] = [dict(c, image=o.get("image")) if isinstance(c, dict) and isinstance(o, dict) else c
                           for c, o in zip(as_list(new.get(key)), as_list(old.get(key)), strict=False)]
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        munged.pop(key, None)
        if key in old:
            munged[key] = old[key]
    previous = old.get("terminationGracePeriodSeconds")
    if isinstance(previous, int) and previous < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = previous
    return munged


def pod_annotation_updates(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """The mirror-pod annotation and the (deprecated) AppArmor annotations are fixed at creation."""
    new_annotations = as_dict(as_dict(new.get("metadata")).get("annotations"))
    old_annotations = as_dict(as_dict(old.get("metadata")).get("annotations"))
    errs: list[FieldError] = []
    for key, value in old_annotations.items():
        fixed = _fixed_annotation(key)
        if fixed and (key not in new_annotations or new_annotations[key] != value):
            errs.append(forbidden(f"metadata.annotations[{key}]", f"may not remove or update {fixed}"))
    for key in new_annotations:
        fixed = _fixed_annotation(key)
        if fixed and key not in old_annotations:
            errs.append(forbidden(f"metadata.annotations[{key}]", f"may not add {fixed}"))
    return errs


def _fixed_annotation(key: str) -> str:
    """How kube names `key` when it is an annotation no update may touch; empty for any other key."""
    if key == MIRROR_POD_ANNOTATION:
        return "mirror pod annotation"
    return "AppArmor annotations" if key.startswith(_APPARMOR_ANNOTATION_PREFIX) else ""
