"""Pods by the claims they use: the shared pods cache indexed by `namespace/claimName` (kube's PodPVCIndex).

The binder asks which pods wait for a claim (its WaitForPodScheduled event) and the PVC protection
controller which pods still hold one, without scanning every pod. A pod's claims are those of its
`persistentVolumeClaim` volumes and those its `ephemeral` volumes make (named `<pod>-<volume>`).

Usage rules: `add_pod_claim_index` before the informers start; both controllers call it, the second call
finds the index there and does nothing.
"""

from __future__ import annotations

from typing import Any

from minikube_py.client.informer import SharedIndexInformer

POD_CLAIM_INDEX = "pod-pvc-index"


def pod_claim_names(pod: dict[str, Any]) -> list[str]:
    """The names of the claims the pod's volumes use, in its namespace."""
    names = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if volume.get("persistentVolumeClaim"):
            names.append(str(volume["persistentVolumeClaim"].get("claimName", "")))
        elif volume.get("ephemeral"):
            names.append(ephemeral_claim_name(pod, volume))
    return names


def ephemeral_claim_name(pod: dict[str, Any], volume: dict[str, Any]) -> str:
    return f"{pod['metadata']['name']}-{volume.get('name', '')}"


def pod_claim_keys(pod: dict[str, Any]) -> list[str]:
    namespace = pod["metadata"].get("namespace", "")
    return [f"{namespace}/{name}" for name in pod_claim_names(pod)]


def add_pod_claim_index(pods: SharedIndexInformer) -> None:
    if POD_CLAIM_INDEX not in pods.indexer.get_indexers():
        pods.add_indexers({POD_CLAIM_INDEX: pod_claim_keys})


def is_terminated(pod: dict[str, Any]) -> bool:
    """A pod that has finished: its containers will not run again."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
