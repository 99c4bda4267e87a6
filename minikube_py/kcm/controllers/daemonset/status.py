"""A DaemonSet's status: counting its nodes and pods, and writing the counts back.

`calculate_status` walks the nodes: a node that should run the daemon counts towards
desiredNumberScheduled, and towards currentNumberScheduled if it has a daemon pod; its oldest pod then counts
as ready, available (ready for `minReadySeconds`) and updated (running the current revision) or not. A node
with a daemon pod that should not run one counts as misscheduled. numberUnavailable is desired - available.

`store_status` writes the counts to the status subresource unless nothing changed, keeping what else the
status holds (collisionCount, conditions). `observe_generation` raises observedGeneration to the DaemonSet's
generation: only a sync that acted on this generation may claim to have observed it. A failed write is
retried once on a freshly read object; zero counts are left out as kube's JSON does, except the four kube
always writes.
"""

from __future__ import annotations

from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.controllers.daemonset.placement import (
    Placement,
    creation_order,
    is_updated,
    template_generation,
)
from minikube_py.kcm.controllers.podcontrol import is_available, is_ready

STATUS_UPDATE_RETRIES = 1
ALWAYS_SHOWN = ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady")

Obj = dict[str, Any]


def calculate_status(ds: Obj, nodes: list[Obj], node_to_pods: dict[str, list[Obj]], revision_hash: str,
                     now: float) -> dict[str, int]:
    """The DaemonSet's counts, node by node; for a node with several pods, its oldest one counts."""
    placement = Placement.of(ds)
    generation = template_generation(ds)
    min_ready = int(ds["spec"].get("minReadySeconds") or 0)
    desired = current = misscheduled = ready = available = updated = 0
    for node in nodes:
        pods = node_to_pods.get(node["metadata"]["name"]) or []
        if not placement.should_run(node)[0]:
            misscheduled += bool(pods)
            continue
        desired += 1
        if not pods:
            continue
        current += 1
        pod = min(pods, key=creation_order)
        if is_ready(pod):
            ready += 1
            available += is_available(pod, min_ready, now)
        updated += is_updated(pod, revision_hash, generation)
    return {"currentNumberScheduled": current, "numberMisscheduled": misscheduled,
            "desiredNumberScheduled": desired, "numberReady": ready, "updatedNumberScheduled": updated,
            "numberAvailable": available, "numberUnavailable": desired - available}


async def store_status(client: RESTClient, ds: Obj, counts: dict[str, int], observe_generation: bool) -> None:
    status = ds.get("status") or {}
    generation = int(ds["metadata"].get("generation") or 0)
    if all(int(status.get(field) or 0) == value for field, value in counts.items()) and \
            int(status.get("observedGeneration") or 0) >= generation:
        return
    meta = ds["metadata"]
    target = ds
    for attempt in range(STATUS_UPDATE_RETRIES + 1):
        kept = {k: v for k, v in (target.get("status") or {}).items() if k not in counts}
        if observe_generation:
            kept["observedGeneration"] = generation
        shown = {k: v for k, v in counts.items() if v or k in ALWAYS_SHOWN}  # kube omits empty ones
        target = {**target, "status": {**kept, **shown}}
        try:
            await client.update(resources.DAEMON_SETS, target, meta["namespace"], subresource="status")
            return
        except errors.NotFound:
            return
        except errors.APIStatusError:
            if attempt >= STATUS_UPDATE_RETRIES:
                raise
            target = await client.get(resources.DAEMON_SETS, meta["name"], meta["namespace"])
