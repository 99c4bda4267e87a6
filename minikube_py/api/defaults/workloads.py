"""Defaults for the workload controllers: apps/v1, batch/v1, ReplicationController and PodTemplate.

Each function takes the whole object. Templates get the PodSpec defaults (`pod.pod_template`) but never the
Pod-only ones. kube deliberately does *not* default the selector of an apps/v1 controller (it is required, so
a typo in labels is an error rather than a silent mismatch). A Job's selector is generated from the Job's uid
(`job_selector`, kube's Job registry does it at create time, and so does our `prepare_for_create`).
"""

from __future__ import annotations

from typing import Any

from minikube_py.api.defaults.fields import child, dicts, set_default
from minikube_py.api.defaults.pod import pod_template

JOB_CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
_LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
_LEGACY_JOB_NAME_LABEL = "job-name"
_MAX_INT32 = 2**31 - 1
# apps/v1 keeps a DaemonSet's old spec.templateGeneration as this annotation: 1 at create, one more each time
# the pod template changes (the daemonset controller labels pods `pod-template-generation` with it)
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def deployment(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    set_default(spec, "replicas", 1)
    strategy = child(spec, "strategy")
    set_default(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = child(strategy, "rollingUpdate")
        set_default(rolling, "maxUnavailable", "25%")
        set_default(rolling, "maxSurge", "25%")
    set_default(spec, "revisionHistoryLimit", 10)
    set_default(spec, "progressDeadlineSeconds", 600)
    pod_template(child(spec, "template"))


def replica_set(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    set_default(spec, "replicas", 1)
    pod_template(child(spec, "template"))


def stateful_set(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    set_default(spec, "podManagementPolicy", "OrderedReady")
    strategy = child(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        child(strategy, "rollingUpdate")
    rolling = strategy.get("rollingUpdate")
    if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict):
        set_default(rolling, "partition", 0)
    retention = child(spec, "persistentVolumeClaimRetentionPolicy")
    set_default(retention, "whenDeleted", "Retain")
    set_default(retention, "whenScaled", "Retain")
    set_default(spec, "replicas", 1)
    set_default(spec, "revisionHistoryLimit", 10)
    pod_template(child(spec, "template"))
    for claim in dicts(spec, "volumeClaimTemplates"):
        # Claim templates get the full PVC defaults, status included: kube shows `status: {phase: Pending}`.
        set_default(child(claim, "spec"), "volumeMode", "Filesystem")
        set_default(child(claim, "status"), "phase", "Pending")


def daemon_set(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    strategy = child(spec, "updateStrategy")
    set_default(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = child(strategy, "rollingUpdate")
        set_default(rolling, "maxUnavailable", 1)
        set_default(rolling, "maxSurge", 0)
    set_default(spec, "revisionHistoryLimit", 10)
    pod_template(child(spec, "template"))
    # decoding reads the annotation into the internal templateGeneration and writes it back: a body without
    # a readable one has "0" until the registry sets the real value (so its writer is recorded owning it)
    annotations = child(obj, "metadata").setdefault("annotations", {})
    annotations[TEMPLATE_GENERATION] = str(template_generation(obj))


def template_generation(obj: dict[str, Any]) -> int:
    """The DaemonSet's template generation from its annotation; 0 when absent or unreadable."""
    annotations = child(obj, "metadata", create=False).get("annotations") or {}
    try:
        return int(annotations.get(TEMPLATE_GENERATION, 0))
    except (TypeError, ValueError):
        return 0


def label_selector_from_template(obj: dict[str, Any]) -> None:
    """Give a ReplicationController its template's labels as selector and as own labels, where unset.

    The one controller whose selector kube still derives: the apps/v1 ones must state theirs, so that a typo
    in a label is an error rather than a controller silently selecting the wrong pods.
    """
    template = obj["spec"].get("template") if isinstance(obj.get("spec"), dict) else None
    labels = child(template, "metadata", create=False).get("labels") if isinstance(template, dict) else None
    if not isinstance(labels, dict):
        return
    if not obj["spec"].get("selector"):
        obj["spec"]["selector"] = dict(labels)
    metadata = child(obj, "metadata")
    if not metadata.get("labels"):
        metadata["labels"] = dict(labels)


def replication_controller(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    label_selector_from_template(obj)
    set_default(spec, "replicas", 1)
    if isinstance(spec.get("template"), dict):
        pod_template(spec["template"])


def pod_template_object(obj: dict[str, Any]) -> None:
    pod_template(child(obj, "template"))


def job(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    set_default(spec, "parallelism", 1)
    # With per-index limits the global limit is effectively off.
    set_default(spec, "backoffLimit", _MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6)
    template_labels = child(child(spec, "template"), "metadata", create=False).get("labels")
    metadata = child(obj, "metadata")
    if isinstance(template_labels, dict) and not metadata.get("labels"):
        metadata["labels"] = dict(template_labels)
    set_default(spec, "completionMode", "NonIndexed")
    set_default(spec, "suspend", False)
    failure_policy = spec.get("podFailurePolicy")
    if isinstance(failure_policy, dict):
        for rule in dicts(failure_policy, "rules"):
            for pattern in dicts(rule, "onPodConditions"):
                set_default(pattern, "status", "True")
    set_default(spec, "podReplacementPolicy", "Failed" if failure_policy is not None else "TerminatingOrFailed")
    pod_template(child(spec, "template"))


def cron_job(obj: dict[str, Any]) -> None:
    spec = child(obj, "spec")
    set_default(spec, "concurrencyPolicy", "Allow")
    set_default(spec, "suspend", False)
    set_default(spec, "successfulJobsHistoryLimit", 3)
    set_default(spec, "failedJobsHistoryLimit", 1)
    pod_template(child(child(child(spec, "jobTemplate"), "spec"), "template"))


def job_selector(obj: dict[str, Any]) -> None:
    """Generate a Job's selector from its uid, as the Job registry does at create time (a selector the
    client sent is kept).

    Runs after the uid is assigned and before validation. Skipped when `spec.manualSelector` is true: the
    user then owns the selector. The template gets both the current labels and the legacy unprefixed ones.
    """
    metadata = child(obj, "metadata")
    spec = child(obj, "spec")
    uid = metadata.get("uid")
    if spec.get("manualSelector") is True or not uid:
        return
    labels = child(child(child(spec, "template"), "metadata"), "labels")
    # Labels the user set are kept: a conflicting value is then reported by validation.
    name = metadata.get("name", "")
    for key, value in ((_LEGACY_JOB_NAME_LABEL, name), (JOB_NAME_LABEL, name),
                       (_LEGACY_CONTROLLER_UID_LABEL, uid), (JOB_CONTROLLER_UID_LABEL, uid)):
        labels.setdefault(key, value)
    child(child(spec, "selector"), "matchLabels").setdefault(JOB_CONTROLLER_UID_LABEL, uid)
