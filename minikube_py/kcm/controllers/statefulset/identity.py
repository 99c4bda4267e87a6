"""A StatefulSet pod's identity: its ordinal, name, labels, hostname and volumes (kube's stateful_set_utils).

Unlike a ReplicaSet's interchangeable pods, pod `<set>-<ordinal>` of a StatefulSet keeps who it is across
restarts: the same name, the same DNS name (`spec.hostname` `<set>-<ordinal>` under `spec.subdomain` =
`spec.serviceName`, the headless Service), and the same PersistentVolumeClaims (`<template>-<set>-<ordinal>`,
see claims.py). Everything here is a pure function of the set and an ordinal or a pod:

* the ordinal is read back from the pod's name (`web-12` → 12; a name that does not end in `-<digits>` has
  ordinal -1 and is never managed); the set manages ordinals `start .. start + replicas - 1`, where `start`
  is `spec.ordinals.start` (0 by default);
* a pod gets the labels `statefulset.kubernetes.io/pod-name` (for a per-pod Service), `apps.kubernetes.io/
  pod-index` (its ordinal) and `controller-revision-hash` (the ControllerRevision it was made from, see
  revisions.py); the revision label is how the controller tells old pods from updated ones;
* a pod's health as the rollout sees it: created (has a phase), Running and Ready, terminating (has a
  deletionTimestamp), unavailable (not healthy, or not yet Ready for `minReadySeconds`:
  podcontrol.is_available, shared with the other workload controllers).

Usage rules: functions take API dicts and never change their arguments unless their name says so
(`update_identity`, `update_storage`, which change the pod they are given, a copy the caller owns).
"""

from __future__ import annotations

import re
from typing import Any

from minikube_py.kcm.controllers import podcontrol
from minikube_py.kcm.controllers.statefulset import claims

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"
_MEMBER_NAME = re.compile(r"^(.*)-([0-9]+)$")
_INT32_MAX = 2**31 - 1


def parent_and_ordinal(pod: dict[str, Any]) -> tuple[str, int]:
    """The set name and ordinal a pod's name spells (`web-3` → ("web", 3)); ("", -1) if it spells none."""
    match = _MEMBER_NAME.match(pod["metadata"].get("name", ""))
    if match is None:
        return "", -1
    ordinal = int(match.group(2))
    return match.group(1), ordinal if ordinal <= _INT32_MAX else -1


def ordinal_of(pod: dict[str, Any]) -> int:
    return parent_and_ordinal(pod)[1]


def is_member_of(sts: dict[str, Any], pod: dict[str, Any]) -> bool:
    return parent_and_ordinal(pod)[0] == sts["metadata"]["name"]


def replicas(sts: dict[str, Any]) -> int:
    value = (sts.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def start_ordinal(sts: dict[str, Any]) -> int:
    return int(((sts.get("spec") or {}).get("ordinals") or {}).get("start") or 0)


def in_ordinal_range(pod: dict[str, Any], sts: dict[str, Any]) -> bool:
    start = start_ordinal(sts)
    return start <= ordinal_of(pod) < start + replicas(sts)


def pod_name(sts: dict[str, Any], ordinal: int) -> str:
    return f"{sts['metadata']['name']}-{ordinal}"


# identity and storage ----------------------------------------------------------------------------------


def identity_matches(sts: dict[str, Any], pod: dict[str, Any]) -> bool:
    parent, ordinal = parent_and_ordinal(pod)
    meta = pod["metadata"]
    return (ordinal >= 0 and parent == sts["metadata"]["name"] and meta.get("name") == pod_name(sts, ordinal)
            and meta.get("namespace") == sts["metadata"]["namespace"]
            and (meta.get("labels") or {}).get(POD_NAME_LABEL) == meta.get("name"))


def storage_matches(sts: dict[str, Any], pod: dict[str, Any]) -> bool:
    """Whether every claim template has a volume of its name in the pod, naming this ordinal's claim."""
    ordinal = ordinal_of(pod)
    if ordinal < 0:
        return False
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []}
    for name, claim in claims.claims_for(sts, ordinal).items():
        source = (volumes.get(name) or {}).get("persistentVolumeClaim")
        if not source or source.get("claimName") != claim["metadata"]["name"]:
            return False
    return True


def update_identity(sts: dict[str, Any], pod: dict[str, Any]) -> None:
    """Give `pod` the name, namespace and identity labels of its ordinal (in place)."""
    ordinal = ordinal_of(pod)
    meta = pod["metadata"]
    meta["name"] = pod_name(sts, ordinal)
    meta["namespace"] = sts["metadata"]["namespace"]
    labels = meta.setdefault("labels", {})
    labels[POD_NAME_LABEL] = meta["name"]
    labels[POD_INDEX_LABEL] = str(ordinal)


def update_storage(sts: dict[str, Any], pod: dict[str, Any]) -> None:
    """Point the pod's volumes named like claim templates at this ordinal's claims (in place)."""
    wanted = claims.claims_for(sts, ordinal_of(pod))
    spec = pod.setdefault("spec", {})
    others = [v for v in spec.get("volumes") or [] if v.get("name") not in wanted]
    volumes = [{"name": name, "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}
               for name, claim in wanted.items()]
    if volumes or others:
        spec["volumes"] = volumes + others


def new_pod(sts: dict[str, Any], ordinal: int, revision: str) -> dict[str, Any]:
    """Pod `ordinal` of `sts`, made from its template and labelled with `revision`."""
    pod = podcontrol.pod_from_template((sts.get("spec") or {}).get("template") or {}, sts)
    pod["metadata"]["name"] = pod_name(sts, ordinal)
    update_identity(sts, pod)
    # hostname and subdomain are set once, at creation: a pod's spec cannot change them later
    pod["spec"]["hostname"] = pod["metadata"]["name"]
    if (sts.get("spec") or {}).get("serviceName"):
        pod["spec"]["subdomain"] = sts["spec"]["serviceName"]
    update_storage(sts, pod)
    pod["metadata"]["labels"][REVISION_LABEL] = revision
    return pod


def new_versioned_pod(current_set: dict[str, Any], update_set: dict[str, Any], current_revision: str,
                      update_revision: str, ordinal: int) -> dict[str, Any]:
    """A missing pod is made at the current revision if the rollout has not reached its ordinal yet."""
    strategy = (current_set.get("spec") or {}).get("updateStrategy") or {}
    rolling = strategy.get("rollingUpdate")
    start = start_ordinal(current_set)
    if rolling is not None:
        keep_current = ordinal < start + int(rolling.get("partition") or 0)
    else:
        current_replicas = int((current_set.get("status") or {}).get("currentReplicas") or 0)
        keep_current = strategy.get("type", "RollingUpdate") == "RollingUpdate" and ordinal < start + current_replicas
    if keep_current:
        return new_pod(current_set, ordinal, current_revision)
    return new_pod(update_set, ordinal, update_revision)


def revision_of(pod: dict[str, Any]) -> str:
    return (pod["metadata"].get("labels") or {}).get(REVISION_LABEL, "")


# health --------------------------------------------------------------------------------------------------


def phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_created(pod: dict[str, Any]) -> bool:
    """Created and seen by the apiserver (which gives every pod a phase); a pod made here has none yet."""
    return phase(pod) != ""


def is_terminating(pod: dict[str, Any]) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def is_running_and_ready(pod: dict[str, Any]) -> bool:
    return phase(pod) == "Running" and podcontrol.is_ready(pod)


def is_healthy(pod: dict[str, Any]) -> bool:
    return is_running_and_ready(pod) and not is_terminating(pod)


def is_unavailable(pod: dict[str, Any], min_ready_seconds: int, now: float) -> bool:
    return not is_healthy(pod) or not podcontrol.is_available(pod, min_ready_seconds, now)
