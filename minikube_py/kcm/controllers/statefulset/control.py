"""One pass of the StatefulSet algorithm over a set and its pods (kube's defaultStatefulSetControl).

`update_stateful_set(sts, pods, revisions)`:

1. **Revisions.** The set's current template becomes the *update revision* (an existing equal revision is
   reused, re-numbered as the newest if it was an older one: a rollback); `status.currentRevision` names the
   *current revision*, the one the pods ran before this rollout (the update revision on the first pass).
2. **Sort the pods.** Pods whose ordinal is in `[start, start + replicas)` are *replicas*, each in its slot;
   members with other ordinals are *condemned*, highest ordinal first. An empty slot gets a new pod: at the
   current revision below the partition, at the update revision otherwise.
3. **Replicas, lowest ordinal first.** A Failed or Succeeded pod is deleted (a new one follows on a later
   pass). A missing pod is created, claims first. With `podManagementPolicy: OrderedReady` ("monotonic") the
   pass stops at the first pod it created, or that is terminating, not Running and Ready, or not yet
   available for `minReadySeconds`: pod N+1 is never made before pod N is healthy. With `Parallel`, all are
   handled at once (in slow-start batches 1, 2, 4, …). A healthy pod whose identity, volumes or claim
   ownership drifted is repaired.
4. **Condemned, highest ordinal first.** Their claims get the ownership the scale-down policy wants; then
   they are deleted: OrderedReady one at a time, and only while every replica is healthy (except that the
   one unhealthy pod may be the one deleted).
5. **Rolling update** (`updateStrategy: RollingUpdate`): from the highest ordinal down to the partition, the
   first pod not at the update revision is deleted (step 3 recreates it at the update revision on a later
   pass); the pass stops there, or at the first pod not yet available. One pod at a time, as kube 1.32 does
   with its MaxUnavailableStatefulSet gate off. `OnDelete`: nothing; a pod gets the new template only when
   the user deletes it.
6. **Status**: replicas (created), readyReplicas, availableReplicas, currentReplicas/updatedReplicas (pods at
   either revision), the revisions, collisionCount, observedGeneration. Once all replicas are updated and
   ready, the current revision becomes the update revision: the rollout is complete.
7. **History**: revisions that no pod uses and that are neither current nor update are deleted, oldest
   first, beyond `revisionHistoryLimit`.

Usage rules: `update_stateful_set` returns the status to write, or raises after computing one
(`SyncFailed.status`), so the caller writes the status even when a write of step 3-5 failed.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.controllers import history, podcontrol
from minikube_py.kcm.controllers.statefulset import identity, revisions
from minikube_py.kcm.controllers.statefulset.statefulpod import ClaimsNotReady, StatefulPodControl

MAX_BATCH = 500  # most pods handled at once in Parallel mode


class SyncFailed(Exception):
    """A write failed during the pass; `status` is what the pass computed up to that point."""

    def __init__(self, cause: Exception, status: dict[str, Any]) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.status = status


@dataclass
class _Pass:
    """The state of one pass: the set at both revisions and the pods sorted into slots."""

    sts: dict[str, Any]
    current_set: dict[str, Any]
    update_set: dict[str, Any]
    current: dict[str, Any]
    update: dict[str, Any]
    replicas: list[dict[str, Any]] = field(default_factory=list)
    condemned: list[dict[str, Any]] = field(default_factory=list)
    min_ready: int = 0
    monotonic: bool = True


class StatefulSetControl:
    def __init__(self, client: RESTClient, pod_control: StatefulPodControl, now: Callable[[], float]) -> None:
        self.client = client
        self.pod_control = pod_control
        self.now = now

    async def update_stateful_set(self, sts: dict[str, Any], pods: list[dict[str, Any]],
                                  known: list[dict[str, Any]]) -> dict[str, Any]:
        known = history.sort_revisions(known)
        current, update, collision_count = await self.set_revisions(sts, known)
        step = self._sort_pods(sts, current, update, pods)
        status = {"observedGeneration": sts["metadata"].get("generation", 0),
                  "currentRevision": current["metadata"]["name"], "updateRevision": update["metadata"]["name"],
                  "collisionCount": collision_count}
        try:
            await self._update_pods(step, status)
        except (errors.APIStatusError, ClaimsNotReady) as error:
            self._count(step, status)
            await self.truncate_history(sts, pods, known, current, update)
            raise SyncFailed(error, complete_rolling_update(sts, status)) from error
        await self.truncate_history(sts, pods, known, current, update)
        return complete_rolling_update(sts, status)

    # revisions -----------------------------------------------------------------------------------------

    async def set_revisions(self, sts: dict[str, Any],
                            known: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any], int]:
        """(current revision, update revision, collision count), creating or re-numbering the latter."""
        collision_count = int((sts.get("status") or {}).get("collisionCount") or 0)
        candidate = revisions.new_revision(sts, history.next_revision(known), collision_count)
        equal = [r for r in known if history.equal_revision(r, candidate)]
        if equal and known and history.equal_revision(known[-1], equal[-1]):
            update = known[-1]  # the template has not changed
        elif equal:
            update = await history.renumber_revision(self.client, equal[-1], candidate["revision"])
        else:
            update, collision_count = await revisions.create_revision(self.client, sts, candidate["revision"],
                                                                      collision_count)
        current_name = (sts.get("status") or {}).get("currentRevision")
        current = next((r for r in known if r["metadata"]["name"] == current_name), update)
        return current, update, collision_count

    async def truncate_history(self, sts: dict[str, Any], pods: list[dict[str, Any]], known: list[dict[str, Any]],
                               current: dict[str, Any], update: dict[str, Any]) -> None:
        live = {current["metadata"]["name"], update["metadata"]["name"]} | {identity.revision_of(p) for p in pods}
        unused = [r for r in known if r["metadata"]["name"] not in live]
        limit = (sts.get("spec") or {}).get("revisionHistoryLimit")
        limit = 10 if limit is None else int(limit)
        if limit < 0 or len(unused) <= limit:
            return
        for revision in unused[:len(unused) - limit]:
            try:
                await self.client.delete(resources.CONTROLLER_REVISIONS, revision["metadata"]["name"],
                                         revision["metadata"]["namespace"])
            except errors.NotFound:
                pass

    # pods ----------------------------------------------------------------------------------------------

    def _sort_pods(self, sts: dict[str, Any], current: dict[str, Any], update: dict[str, Any],
                   pods: list[dict[str, Any]]) -> _Pass:
        spec = sts.get("spec") or {}
        step = _Pass(sts, revisions.apply_revision(sts, current), revisions.apply_revision(sts, update),
                     current, update, min_ready=int(spec.get("minReadySeconds") or 0),
                     monotonic=spec.get("podManagementPolicy", "OrderedReady") != "Parallel")
        start, count = identity.start_ordinal(sts), identity.replicas(sts)
        slots: list[dict[str, Any] | None] = [None] * count
        for pod in pods:
            ordinal = identity.ordinal_of(pod)
            if identity.in_ordinal_range(pod, sts):
                slots[ordinal - start] = pod
            elif ordinal >= 0:
                step.condemned.append(pod)
        step.condemned.sort(key=identity.ordinal_of, reverse=True)
        step.replicas = [pod if pod is not None else
                         identity.new_versioned_pod(step.current_set, step.update_set, current["metadata"]["name"],
                                                    update["metadata"]["name"], start + index)
                         for index, pod in enumerate(slots)]
        return step

    async def _update_pods(self, step: _Pass, status: dict[str, Any]) -> None:
        self._count(step, status)
        if step.sts["metadata"].get("deletionTimestamp"):
            return  # a set being deleted only reports
        now = self.now()
        unavailable = [p for p in step.replicas + step.condemned[::-1]
                       if identity.is_unavailable(p, step.min_ready, now)]
        first_unavailable = unavailable[0] if unavailable else None
        stopped = await self._run_for_all(step, step.replicas, lambda pod: self._process_replica(step, pod))
        if not stopped:
            stopped = await self._run_for_all(step, step.condemned, lambda pod: self._fix_condemned_claims(step, pod))
        if not stopped:
            stopped = await self._run_for_all(
                step, step.condemned, lambda pod: self._process_condemned(step, pod, first_unavailable))
        self._count(step, status)
        strategy = (step.sts.get("spec") or {}).get("updateStrategy") or {}
        if stopped or strategy.get("type", "RollingUpdate") == "OnDelete":
            return
        await self._rolling_update(step, status, int((strategy.get("rollingUpdate") or {}).get("partition") or 0))

    async def _run_for_all(self, step: _Pass, pods: list[dict[str, Any]],
                           fn: Callable[[dict[str, Any]], Awaitable[bool]]) -> bool:
        """Run `fn` on each pod; OrderedReady: in order, until one says stop. True if the pass must stop."""
        if step.monotonic:
            for pod in pods:
                if await fn(pod):
                    return True
            return False
        done, batch = 0, 1
        while done < len(pods):
            results = await asyncio.gather(*(fn(pod) for pod in pods[done:done + batch]), return_exceptions=True)
            done += batch
            failure = next((r for r in results if isinstance(r, BaseException)), None)
            if failure is not None:
                raise failure
            batch = min(2 * batch, MAX_BATCH)
        return False

    async def _process_replica(self, step: _Pass, pod: dict[str, Any]) -> bool:
        """Step 3 for one replica; True if an OrderedReady pass must stop here."""
        sts, phase = step.sts, identity.phase(pod)
        if phase in ("Failed", "Succeeded"):
            if not identity.is_terminating(pod):
                await self.pod_control.delete_pod(sts, pod)
            return True
        if not identity.is_created(pod):
            if self.pod_control.claim_is_stale(sts, pod):
                return True  # the garbage collector must delete the old claim first
            await self.pod_control.create_pod(sts, pod)
            return step.monotonic
        if phase == "Pending":
            await self.pod_control.create_claims(sts, pod)
        if step.monotonic and (identity.is_terminating(pod) or not identity.is_running_and_ready(pod)
                               or not podcontrol.is_available(pod, step.min_ready, self.now())):
            return True
        if (identity.identity_matches(sts, pod) and identity.storage_matches(sts, pod)
                and self.pod_control.claims_match_policy(step.update_set, pod, scaled_down=False)):
            return False
        await self.pod_control.update_pod(step.update_set, copy.deepcopy(pod), scaled_down=False)
        return False

    async def _fix_condemned_claims(self, step: _Pass, pod: dict[str, Any]) -> bool:
        if not self.pod_control.claims_match_policy(step.update_set, pod, scaled_down=True):
            await self.pod_control.update_claims_for_policy(step.update_set, pod, scaled_down=True)
        return False

    async def _process_condemned(self, step: _Pass, pod: dict[str, Any],
                                 first_unavailable: dict[str, Any] | None) -> bool:
        if identity.is_terminating(pod):
            return step.monotonic  # OrderedReady waits for it to be gone
        if (step.monotonic and pod is not first_unavailable
                and (not identity.is_running_and_ready(pod)
                     or not podcontrol.is_available(pod, step.min_ready, self.now()))):
            return True
        await self.pod_control.delete_pod(step.sts, pod)
        return True

    async def _rolling_update(self, step: _Pass, status: dict[str, Any], partition: int) -> None:
        update_name = step.update["metadata"]["name"]
        for pod in reversed(step.replicas[partition:]):
            if identity.revision_of(pod) != update_name and not identity.is_terminating(pod):
                await self.pod_control.delete_pod(step.sts, pod)
                status["currentReplicas"] -= 1
                return
            if identity.is_unavailable(pod, step.min_ready, self.now()):
                return  # wait for the updated pod to be available

    def _count(self, step: _Pass, status: dict[str, Any]) -> None:
        now, current, update = self.now(), step.current["metadata"]["name"], step.update["metadata"]["name"]
        counts = {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0, "currentReplicas": 0,
                  "updatedReplicas": 0}
        for pod in step.replicas + step.condemned:
            if not identity.is_created(pod):
                continue
            counts["replicas"] += 1
            if identity.is_running_and_ready(pod):
                counts["readyReplicas"] += 1
                counts["availableReplicas"] += podcontrol.is_available(pod, step.min_ready, now)
            if not identity.is_terminating(pod):
                counts["currentReplicas"] += identity.revision_of(pod) == current
                counts["updatedReplicas"] += identity.revision_of(pod) == update
        status.update(counts)


def complete_rolling_update(sts: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """The status with the rollout marked complete once every replica is updated and ready."""
    wanted = identity.replicas(sts)
    strategy = ((sts.get("spec") or {}).get("updateStrategy") or {}).get("type", "RollingUpdate")
    if (strategy == "RollingUpdate" and status["updatedReplicas"] == wanted
            and status["readyReplicas"] == wanted and status["replicas"] == wanted):
        status["currentReplicas"] = status["updatedReplicas"]
        status["currentRevision"] = status["updateRevision"]
    return status
