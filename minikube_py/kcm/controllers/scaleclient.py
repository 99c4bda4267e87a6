"""The `scale` subresource of any kind (client-go's scale client with a RESTMapper in front of it).

Controllers that size workloads they do not know (the autoscaler's `scaleTargetRef`, the disruption
controller's pod owners) find the resource serving a kind, then read and write its `autoscaling/v1 Scale`:
`spec.replicas` (the wish), `status.replicas` and `status.selector` (the pods it counts, as a selector
string). Deployments, ReplicaSets, StatefulSets, ReplicationControllers and custom resources whose CRD has a
scale subresource all answer the same way.

Kinds every apiserver serves are mapped from the built-in table; others through discovery, read again when
a kind is not found (a CRD installed since). Errors are kube's `no matches for kind ...`.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api.kinds import Resource, default_registry
from minikube_py.client import resources
from minikube_py.client.discovery import Discovery, discover
from minikube_py.client.rest import RESTClient

BUILT_IN = default_registry()


class NoKindMatchError(Exception):
    """No served resource has this kind."""


class ScaleClient:
    def __init__(self, client: RESTClient) -> None:
        self.client = client
        self._discovery: Discovery | None = None

    async def resource_for(self, api_version: str, kind: str) -> Resource:
        """The resource serving `kind` at exactly this `api_version`."""
        group, _, version = api_version.rpartition("/")
        found = BUILT_IN.by_kind(group, version, kind) or await self._discovered(
            lambda d: d.resource_for(api_version, kind))
        if found is None:
            raise NoKindMatchError(f'no matches for kind "{kind}" in version "{api_version}"')
        return found

    async def resources_for(self, group: str, kind: str) -> list[Resource]:
        """Every version's resource serving `kind` in `group` (kube's RESTMappings for a GroupKind)."""
        def matching(resources_: list[Resource]) -> list[Resource]:
            return [r for r in resources_ if (r.group, r.kind) == (group, kind)]

        found = matching(list(BUILT_IN.resources)) or await self._discovered(lambda d: matching(d.resources))
        if not found:
            raise NoKindMatchError(f'no matches for kind "{kind}" in group "{group}"')
        return found

    async def _discovered(self, lookup: Any) -> Any:
        found = lookup(self._discovery) if self._discovery is not None else None
        if not found:
            self._discovery = await discover(self.client)
            found = lookup(self._discovery)
        return found

    async def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any]:
        return await self.client.get_path(resources.path(resource, namespace, name, "scale"))

    async def update(self, resource: Resource, namespace: str, scale: dict[str, Any]) -> dict[str, Any]:
        return await self.client.update(resource, scale, namespace, subresource="scale")

    async def implements_scale(self, resource: Resource) -> bool:
        """Whether discovery lists `<plural>/scale` speaking `Scale` for this resource."""
        base = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
        document = await self.client.get_path(base)
        return any(entry.get("name") == f"{resource.plural}/scale" and entry.get("kind") == "Scale"
                   for entry in document.get("resources") or [])
