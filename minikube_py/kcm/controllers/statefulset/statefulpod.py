"""The writes a StatefulSet makes for one pod: its claims, the pod itself, its deletion (kube's
StatefulPodControl), each reported as an Event on the set in kube's words:

    SuccessfulCreate  create Pod web-0 in StatefulSet web successful
    FailedCreate      create Pod web-0 in StatefulSet web failed error: <why>
    SuccessfulCreate  create Claim data-web-0 Pod web-0 in StatefulSet web success
    FailedCreate      create Claim data-web-0 for Pod web-0 in StatefulSet web failed error: <why>
    SuccessfulDelete  delete Pod web-2 in StatefulSet web successful
    SuccessfulUpdate  update Pod web-1 in StatefulSet web successful

A pod's claims are created before the pod (a claim that exists is reused: that is the point), and again
while the pod is Pending, in case one was deleted. A claim being deleted blocks the pod. The claims'
ownerReferences follow the retention policy (claims.py) and are fixed by a full update of the claim.

Usage rules: every method raises the API error after recording it, so the sync fails and the set is
retried with backoff; AlreadyExists from a pod create (a stale cache) is raised without an event.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.events import CoreEventRecorder
from minikube_py.client.listers import Lister
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.controllers.statefulset import claims, identity


class ClaimsNotReady(Exception):
    """A pod's claims could not all be created, or one is being deleted; the message says which."""


class StatefulPodControl:
    def __init__(self, client: RESTClient, recorder: CoreEventRecorder, claim_lister: Lister) -> None:
        self.client = client
        self.recorder = recorder
        self.claims = claim_lister

    async def create_pod(self, sts: dict[str, Any], pod: dict[str, Any]) -> None:
        try:
            await self.create_claims(sts, pod)
            await self.client.create(resources.PODS, pod, sts["metadata"]["namespace"])
        except errors.AlreadyExists:
            raise
        except (errors.APIStatusError, ClaimsNotReady) as error:
            self._pod_event("create", sts, pod, error)
            raise
        try:
            await self.update_claims_for_policy(sts, pod, scaled_down=False)
        except errors.APIStatusError as error:
            self._pod_event("update", sts, pod, error)
            raise
        self._pod_event("create", sts, pod, None)

    async def update_pod(self, sts: dict[str, Any], pod: dict[str, Any], scaled_down: bool) -> None:
        """Restore the identity, volumes and claim ownership of an existing pod (a copy of it)."""
        changed = False
        try:
            if not identity.identity_matches(sts, pod):
                identity.update_identity(sts, pod)
                changed = True
            if not identity.storage_matches(sts, pod):
                identity.update_storage(sts, pod)
                await self.create_claims(sts, pod)
                changed = True
            if not self.claims_match_policy(sts, pod, scaled_down):
                await self.update_claims_for_policy(sts, pod, scaled_down)
            if changed:
                await self.client.update(resources.PODS, pod, sts["metadata"]["namespace"])
        except (errors.APIStatusError, ClaimsNotReady) as error:
            self._pod_event("update", sts, pod, error)
            raise
        if changed:
            self._pod_event("update", sts, pod, None)

    async def delete_pod(self, sts: dict[str, Any], pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        try:
            await self.client.delete(resources.PODS, meta["name"], meta["namespace"],
                                     preconditions={"uid": meta["uid"]})
        except errors.NotFound:
            return  # already gone: what we wanted
        except errors.APIStatusError as error:
            self._pod_event("delete", sts, pod, error)
            raise
        self._pod_event("delete", sts, pod, None)

    # claims ---------------------------------------------------------------------------------------------

    async def create_claims(self, sts: dict[str, Any], pod: dict[str, Any]) -> None:
        """Create the pod's missing claims; raise if one could not be created or is being deleted."""
        results = await asyncio.gather(*(self._create_claim(sts, pod, claim)
                                         for claim in claims.claims_for(sts, identity.ordinal_of(pod)).values()))
        problems = [problem for problem in results if problem]
        if problems:
            message = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
            raise ClaimsNotReady(message)

    async def _create_claim(self, sts: dict[str, Any], pod: dict[str, Any], claim: dict[str, Any]) -> str:
        name = claim["metadata"]["name"]
        try:
            existing = self.claims.get(name, sts["metadata"]["namespace"])
        except errors.NotFound:
            try:
                await self.client.create(resources.PERSISTENT_VOLUME_CLAIMS, claim, sts["metadata"]["namespace"])
            except errors.AlreadyExists as error:  # the cache is behind: it exists
                return f"failed to create PVC {name}: {error}"
            except errors.APIStatusError as error:
                self._claim_event("create", sts, pod, name, error)
                return f"failed to create PVC {name}: {error}"
            self._claim_event("create", sts, pod, name, None)
            return ""
        if existing["metadata"].get("deletionTimestamp"):
            return f"pvc {name} is being deleted"
        return ""

    def claim_is_stale(self, sts: dict[str, Any], pod: dict[str, Any]) -> bool:
        """Whether a claim left by an earlier pod of this name must be deleted before the pod is made."""
        for claim in claims.claims_for(sts, identity.ordinal_of(pod)).values():
            existing = self._cached_claim(claim["metadata"]["name"], sts)
            if existing is not None and claims.is_stale_for_new_pod(existing, sts, pod):
                return True
        return False

    def claims_match_policy(self, sts: dict[str, Any], pod: dict[str, Any], scaled_down: bool) -> bool:
        for claim in claims.claims_for(sts, identity.ordinal_of(pod)).values():
            existing = self._cached_claim(claim["metadata"]["name"], sts)
            if existing is not None and not claims.owner_refs_up_to_date(existing, sts, pod, scaled_down):
                return False
        return True

    async def update_claims_for_policy(self, sts: dict[str, Any], pod: dict[str, Any], scaled_down: bool) -> None:
        for claim in claims.claims_for(sts, identity.ordinal_of(pod)).values():
            existing = self._cached_claim(claim["metadata"]["name"], sts)
            if existing is None or claims.owner_refs_up_to_date(existing, sts, pod, scaled_down):
                continue
            updated = copy.deepcopy(existing)
            updated["metadata"]["ownerReferences"] = claims.updated_owner_refs(existing, sts, pod, scaled_down)
            await self.client.update(resources.PERSISTENT_VOLUME_CLAIMS, updated, sts["metadata"]["namespace"])

    def _cached_claim(self, name: str, sts: dict[str, Any]) -> dict[str, Any] | None:
        try:
            return self.claims.get(name, sts["metadata"]["namespace"])
        except errors.NotFound:
            return None

    # events ---------------------------------------------------------------------------------------------

    def _pod_event(self, verb: str, sts: dict[str, Any], pod: dict[str, Any], error: Exception | None) -> None:
        what = f"{verb} Pod {pod['metadata']['name']} in StatefulSet {sts['metadata']['name']}"
        if error is None:
            self.recorder.event(sts, "Normal", f"Successful{verb.title()}", f"{what} successful")
        else:
            self.recorder.event(sts, "Warning", f"Failed{verb.title()}", f"{what} failed error: {error}")

    def _claim_event(self, verb: str, sts: dict[str, Any], pod: dict[str, Any], claim: str,
                     error: Exception | None) -> None:
        pod_name, set_name = pod["metadata"]["name"], sts["metadata"]["name"]
        if error is None:
            self.recorder.event(sts, "Normal", f"Successful{verb.title()}",
                                f"{verb} Claim {claim} Pod {pod_name} in StatefulSet {set_name} success")
        else:
            self.recorder.event(sts, "Warning", f"Failed{verb.title()}",
                                f"{verb} Claim {claim} for Pod {pod_name} in StatefulSet {set_name} failed error: {error}")
