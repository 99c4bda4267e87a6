"""The garbage collector's writes, each guarded so it can only hit the object it was meant for.

The collector works on objects of any kind, known only by an `ObjectReference` (apiVersion, kind,
namespace, name, uid). `ObjectOperations` maps the apiVersion and kind to the resource to call through the
latest discovery (kube's RESTMapper) and does the four things the collector needs:

* `get`: the live object (404 if there is none; a namespaced kind asked for without a namespace, which a
  virtual owner named by a cluster-scoped object can be, has none either);
* `delete`: with the uid as a precondition, so an object re-created under the same name is never deleted
  by mistake, and with the resourceVersion whose ownerReferences the decision was based on. If that
  version is stale (409) but the ownerReferences did not change, the delete is sent again with the uid
  alone; if they changed, the conflict goes back to the worker, which decides again later;
* `remove_owner_references` / `unblock_owner_references`: a strategic merge patch that deletes (or sets
  `blockOwnerDeletion: false` on) the references by owner uid and carries the object's own uid. Custom
  resources take no strategic merge patch (415): then a JSON merge patch with the whole new list and the
  resourceVersion it was computed from (409 if the object changed meanwhile);
* `remove_finalizer`: a JSON merge patch of the finalizer list, guarded by resourceVersion and uid.

Usage rules: a 409 Conflict is raised to the caller; the collector's worker retries the item later with
exponential backoff, reading everything afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minikube_py.api.kinds import Resource
from minikube_py.client import errors
from minikube_py.client.discovery import Discovery
from minikube_py.client.rest import RESTClient

from .graph import ObjectReference, OwnerReference


class RESTMappingError(Exception):
    """No served resource has this apiVersion and kind (yet: a CRD may appear at the next discovery)."""

    def __init__(self, api_version: str, kind: str) -> None:
        super().__init__(f"unable to get REST mapping for kind: {kind}, version: {api_version}")


class ObjectOperations:
    def __init__(self, client: RESTClient) -> None:
        self.client = client
        self.discovery = Discovery()  # replaced by each discovery pass

    def resource_for(self, api_version: str, kind: str) -> Resource | None:
        return self.discovery.resource_for(api_version, kind)

    def resource(self, identity: ObjectReference) -> Resource:
        found = self.resource_for(identity.api_version, identity.kind)
        if found is None:
            raise RESTMappingError(identity.api_version, identity.kind)
        return found

    async def get(self, identity: ObjectReference) -> dict[str, Any]:
        resource = self.resource(identity)
        if resource.namespaced and not identity.namespace:
            raise errors.new_not_found(resource.group_resource, identity.name)
        return await self.client.get(resource, identity.name, _namespace(resource, identity))

    async def delete(self, identity: ObjectReference, resource_version: str, owners: list[OwnerReference],
                     policy: str) -> None:
        resource = self.resource(identity)
        namespace = _namespace(resource, identity)
        preconditions = {"uid": identity.uid, **({"resourceVersion": resource_version} if resource_version else {})}
        try:
            await self.client.delete(resource, identity.name, namespace, preconditions=preconditions,
                                     propagation_policy=policy)
        except errors.Conflict:
            if not resource_version:
                raise
            live = await self.get(identity)
            meta = live["metadata"]
            if meta.get("uid") != identity.uid or (meta.get("ownerReferences") or []) != owners:
                raise
            await self.client.delete(resource, identity.name, namespace, preconditions={"uid": identity.uid},
                                     propagation_policy=policy)

    async def remove_owner_references(self, identity: ObjectReference, owner_uids: list[str]) -> None:
        strategic = {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": uid} for uid in owner_uids],
                                  "uid": identity.uid}}
        await self._patch(identity, strategic,
                          lambda refs: [ref for ref in refs if ref.get("uid") not in owner_uids])

    async def unblock_owner_references(self, identity: ObjectReference, owners: list[OwnerReference]) -> None:
        blocking = [{**ref, "blockOwnerDeletion": False} for ref in owners if ref.get("blockOwnerDeletion") is True]
        strategic = {"metadata": {"ownerReferences": blocking, "uid": identity.uid}}
        await self._patch(identity, strategic, lambda refs: [{**ref, "blockOwnerDeletion": False} for ref in refs])

    async def remove_finalizer(self, identity: ObjectReference, finalizer: str) -> bool:
        """Remove `finalizer` from the object; False if there was nothing to do (gone, replaced, or done)."""
        try:
            live = await self.get(identity)
        except errors.NotFound:
            return False
        meta = live["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if meta.get("uid") != identity.uid or finalizer not in finalizers:
            return False
        patch = {"metadata": {"resourceVersion": meta.get("resourceVersion"),
                              "finalizers": [f for f in finalizers if f != finalizer]}}
        resource = self.resource(identity)
        await self.client.patch(resource, identity.name, patch, _namespace(resource, identity), patch_type="merge")
        return True

    async def _patch(self, identity: ObjectReference, strategic: dict[str, Any],
                     new_references: Callable[[list[OwnerReference]], list[OwnerReference]]) -> None:
        """The strategic merge patch; for kinds that take none, a merge patch of `new_references(live refs)`."""
        resource = self.resource(identity)
        namespace = _namespace(resource, identity)
        try:
            await self.client.patch(resource, identity.name, strategic, namespace, patch_type="strategic")
            return
        except errors.UnsupportedMediaType:
            pass
        meta = (await self.get(identity))["metadata"]
        if meta.get("uid") != identity.uid:
            raise errors.new_not_found(resource.group_resource, identity.name)
        patch = {"metadata": {"resourceVersion": meta.get("resourceVersion"),
                              "ownerReferences": new_references(list(meta.get("ownerReferences") or []))}}
        await self.client.patch(resource, identity.name, patch, namespace, patch_type="merge")


def _namespace(resource: Resource, identity: ObjectReference) -> str | None:
    return identity.namespace if resource.namespaced else None
