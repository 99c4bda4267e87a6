"""batch/v1: Jobs and CronJobs.

A Job's pods run to completion, so its template's `restartPolicy` must be `OnFailure` or `Never`. Its selector
is generated from the Job's uid (see `defaults.workloads.job_selector`) unless `manualSelector` is set, and
validation checks that the generated labels were not tampered with. Once created, a Job's selector,
template and completion settings are fixed: a running Job cannot be re-aimed. A CronJob needs a parseable
5-field schedule and a name short enough to leave room for the Jobs' timestamp suffix.
"""

from __future__ import annotations

import re
import zoneinfo
from typing import Any

from minikube_py.api import names
from minikube_py.api.defaults.workloads import JOB_CONTROLLER_UID_LABEL, JOB_NAME_LABEL
from minikube_py.api.errors import FieldError, invalid, not_supported, required
from minikube_py.api.validation.cron import schedule_errors
from minikube_py.api.validation.messages import (
    GoValue,
    as_dict,
    as_int,
    go_label_selector,
    go_scalar,
    go_string_map,
    immutable,
    invalid_go,
    invalid_value,
    nonnegative,
    not_supported_go,
    semantic,
)
from minikube_py.api.validation.meta import selector_is_valid, selector_matches, validate_label_selector
from minikube_py.api.validation.pod import pod_template

_CRON_JOB_NAME_MAX = names.DNS1035_LABEL_MAX - 11
_TIME_ZONE_PART = re.compile(r"[A-Za-z\.\-_0-9+]{1,14}")
_MAX_INDEXED_PARALLELISM = 100000


def _job_spec(spec: dict[str, Any], path: str) -> list[FieldError]:
    """`validateJobSpec`: what Jobs and CronJob job templates share."""
    errs: list[FieldError] = []
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        errs += nonnegative(f"{path}.{key}", spec.get(key))
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            errs.append(not_supported(f"{path}.completionMode", mode, ["NonIndexed", "Indexed"]))
        if mode == "Indexed":
            if spec.get("completions") is None:
                errs.append(required(f"{path}.completions", "when completion mode is Indexed"))
            if as_int(spec.get("parallelism")) > _MAX_INDEXED_PARALLELISM:
                errs.append(invalid(f"{path}.parallelism", spec["parallelism"], "must be less than or equal to "
                                                                                "100000 when completion mode is Indexed"))
    per_index = spec.get("backoffLimitPerIndex")
    if per_index is not None:
        errs += nonnegative(f"{path}.backoffLimitPerIndex", per_index)
        if mode != "Indexed":
            errs.append(invalid(f"{path}.backoffLimitPerIndex", per_index, "requires indexed completion mode"))
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None and replacement not in ("TerminatingOrFailed", "Failed"):
        errs.append(not_supported(f"{path}.podReplacementPolicy", replacement, ["Failed", "TerminatingOrFailed"]))
    errs += pod_template(as_dict(spec.get("template")), f"{path}.template")
    return errs + _restart_policy(spec, path)


def _restart_policy(spec: dict[str, Any], path: str) -> list[FieldError]:
    policy = as_dict(as_dict(spec.get("template")).get("spec")).get("restartPolicy")
    at = f"{path}.template.spec.restartPolicy"
    # Always is what PodSpec defaulting fills in, so kube words it as a missing value.
    if policy in ("Always", "", None):
        return [required(at, 'valid values: "OnFailure", "Never"')]
    if policy not in ("OnFailure", "Never"):
        return [not_supported(at, policy, ["OnFailure", "Never"])]
    if spec.get("podFailurePolicy") is not None and policy != "Never":
        return [invalid_value(at, policy, 'only "Never" is supported when podFailurePolicy is specified')]
    return []


def _job_with_selector(spec: dict[str, Any]) -> list[FieldError]:
    """`ValidateJobSpec`: a Job must carry a selector that matches its template."""
    errs = _job_spec(spec, "spec")
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        errs.append(required("spec.selector"))
    else:
        errs += validate_label_selector(selector, "spec.selector")
    labels = as_dict(as_dict(spec.get("template")).get("metadata")).get("labels")
    if (not isinstance(selector, dict) or selector_is_valid(selector)) and not selector_matches(selector, labels):
        errs.append(invalid_go("spec.template.metadata.labels", go_string_map(labels),
                               "`selector` does not match template `labels`"))
    return errs


def job(obj: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    errs = _generated_selector(obj) + _job_with_selector(spec)
    name, completions = as_dict(obj.get("metadata")).get("name") or "", spec.get("completions")
    if spec.get("completionMode") == "Indexed" and isinstance(completions, int) and completions > 0:
        # Indexed pods are named <job>-<index>; the longest such name must still be a DNS label.
        hostname = f"{name}-{completions - 1}"
        if names.is_dns1123_label(hostname):
            errs.append(invalid_value("metadata.name", name, f"will not able to create pod with invalid DNS label: "
                                                             f"{hostname}"))
    return errs


def _has_label(labels: Any, key: str, expected: str) -> list[FieldError]:
    path = f"spec.template.metadata.labels[{key}]"
    if not isinstance(labels, dict) or key not in labels:
        return [required(path, f"must be '{expected}'")]
    if labels[key] != expected:
        return [invalid_go(path, go_string_map(labels), f"must be '{expected}'")]
    return []


def _generated_selector(obj: dict[str, Any]) -> list[FieldError]:
    spec, metadata = as_dict(obj.get("spec")), as_dict(obj.get("metadata"))
    uid, name = str(metadata.get("uid") or ""), str(metadata.get("name") or "")
    if spec.get("manualSelector") is True or not uid:
        return []
    labels = as_dict(as_dict(spec.get("template")).get("metadata")).get("labels")
    errs = [] if labels is not None else [required("spec.template.metadata.labels")]
    expected = {"controller-uid": uid, "job-name": name, JOB_CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name}
    for key, value in expected.items():
        errs += _has_label(labels, key, value)
    selector = spec.get("selector")
    if isinstance(selector, dict) and selector_is_valid(selector) and not selector_matches(selector, expected):
        errs.append(invalid_go("spec.selector", go_label_selector(selector), "`selector` not auto-generated"))
    return errs


def job_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    new_spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    errs = _job_with_selector(new_spec)
    errs += _completions_update(new_spec, old_spec)
    errs += immutable("spec.selector", semantic(new_spec.get("selector")), semantic(old_spec.get("selector")),
                      go_label_selector(new_spec.get("selector")))
    errs += _template_update(new_spec, old_spec, as_dict(old.get("status")))
    for key in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"):
        value = new_spec.get(key)
        shown = GoValue(f"batch.{key[0].upper()}{key[1:]}{{...}}") if isinstance(value, dict) else go_scalar(value)
        errs += immutable(f"spec.{key}", semantic(value), semantic(old_spec.get(key)), shown)
    return errs


def _completions_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    completions = new.get("completions")
    if completions == old.get("completions"):
        return []
    # Elastic Indexed Jobs: completions may change together with parallelism.
    if new.get("completionMode") == "Indexed":
        if completions is not None and completions != new.get("parallelism"):
            return [invalid("spec.completions", completions, "can only be modified in tandem with spec.parallelism")]
        return []
    return immutable("spec.completions", completions, old.get("completions"), go_scalar(completions))


def _template_update(new: dict[str, Any], old: dict[str, Any], old_status: dict[str, Any]) -> list[FieldError]:
    template, previous = as_dict(new.get("template")), as_dict(old.get("template"))
    if old.get("suspend") is True and old_status.get("startTime") is None:
        # A suspended Job that never started may be re-targeted: its scheduling directives and labels.
        previous = {**previous, "metadata": {**as_dict(previous.get("metadata")),
                                             **{k: v for k, v in as_dict(template.get("metadata")).items()
                                                if k in ("labels", "annotations")}}}
        spec = dict(as_dict(previous.get("spec")))
        for key in ("nodeSelector", "tolerations", "schedulingGates"):
            spec[key] = as_dict(template.get("spec")).get(key)
        affinity = dict(as_dict(spec.get("affinity")))
        affinity["nodeAffinity"] = as_dict(as_dict(template.get("spec")).get("affinity")).get("nodeAffinity")
        spec["affinity"] = affinity
        previous["spec"] = spec
    return immutable("spec.template", semantic(template), semantic(previous), "core.PodTemplateSpec{...}")


def cron_job(obj: dict[str, Any]) -> list[FieldError]:
    name = str(as_dict(obj.get("metadata")).get("name") or "")
    errs: list[FieldError] = []
    if len(name) > _CRON_JOB_NAME_MAX:
        errs.append(invalid_value("metadata.name", name, f"must be no more than {_CRON_JOB_NAME_MAX} characters"))
    return errs + _cron_job_spec(as_dict(obj.get("spec")), None)


def cron_job_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return _cron_job_spec(as_dict(new.get("spec")), as_dict(old.get("spec")))


def _cron_job_spec(spec: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    schedule = str(spec.get("schedule") or "")
    errs: list[FieldError] = []
    if not schedule:
        errs.append(required("spec.schedule"))
    else:
        errs += [invalid_value("spec.schedule", schedule, m) for m in schedule_errors(schedule)]
        # A zone inside the schedule is only tolerated on CronJobs created before timeZone existed.
        if "TZ" in schedule and not (old is not None and "TZ" in str(old.get("schedule") or "")):
            errs.append(invalid_value("spec.schedule", schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone "
                                                                 "field instead"))
    errs += nonnegative("spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"))
    if old is None or old.get("timeZone") != spec.get("timeZone"):
        errs += _time_zone(spec.get("timeZone"))
    policy = spec.get("concurrencyPolicy")
    if not policy:
        errs.append(required("spec.concurrencyPolicy"))
    elif policy not in ("Allow", "Forbid", "Replace"):
        errs.append(not_supported("spec.concurrencyPolicy", policy, ["Allow", "Forbid", "Replace"]))
    errs += _job_template(as_dict(spec.get("jobTemplate")))
    for key in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        errs += nonnegative(f"spec.{key}", spec.get(key))
    return errs


def _time_zone(zone: Any) -> list[FieldError]:
    if zone is None:
        return []
    zone = str(zone)
    if not zone:
        return [invalid_value("spec.timeZone", zone, "timeZone must be nil or non-empty string")]
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.fullmatch(part):
            return [invalid_value("spec.timeZone", zone, f"unknown time zone {zone}")]
    if zone.lower() == "local":
        return [invalid_value("spec.timeZone", zone, "timeZone must be an explicit time zone as defined in "
                                                     "https://www.iana.org/time-zones")]
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return [invalid_value("spec.timeZone", zone, f"unknown time zone {zone}")]
    return []


def _job_template(template: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(template.get("spec"))
    errs = _job_spec(spec, "spec.jobTemplate.spec")
    if spec.get("selector") is not None:
        errs.append(invalid_go("spec.jobTemplate.spec.selector", go_label_selector(spec["selector"]),
                               "`selector` will be auto-generated"))
    if spec.get("manualSelector") is True:
        errs.append(not_supported_go("spec.jobTemplate.spec.manualSelector", "true", ["nil", "false"]))
    return errs
