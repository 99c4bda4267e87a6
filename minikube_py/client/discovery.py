"""Discovery from the client's side: which resources the apiserver serves, read from its legacy documents.

Controllers that act on "every kind there is" cannot use a fixed list, because custom resources come and go:
the garbage collector must see the ownerReferences of a CRD's objects, and the namespace controller must
empty a namespace of every kind in it. Both ask the apiserver:

* `discover(client)` reads `/api/v1` and, for each group in `/apis`, each version's `APIResourceList`,
  giving a `Discovery`: every served `Resource` (subresources such as `pods/status` left out) with its
  verbs, and each group's preferred version;
* `Discovery.preferred()` keeps one version per group (what to list and watch: kube's
  `ServerPreferredResources`); `with_verbs("list", "delete")` filters by what a resource supports;
* a built-in resource comes back as the very `Resource` value of `client.resources` (so informers made
  from discovery are the shared ones); others are built from the document;
* `Discovery.resource_for(api_version, kind)` maps an ownerReference's `apiVersion`/`kind` to the resource
  to GET it by (kube's RESTMapper), in any served version, not only the preferred one.

A group-version whose document cannot be read (an aggregated API that is down) is recorded in
`Discovery.failed` and left out; the rest is still returned, so one broken API does not stop a controller
that only needs the others.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from minikube_py.api.kinds import Resource
from minikube_py.client import errors, resources
from minikube_py.client.rest import RESTClient


@dataclass
class Discovery:
    resources: list[Resource] = field(default_factory=list)
    preferred_versions: dict[str, str] = field(default_factory=dict)  # group -> preferred version
    failed: dict[str, str] = field(default_factory=dict)  # group/version -> why it could not be read

    def preferred(self) -> list[Resource]:
        return [r for r in self.resources if self.preferred_versions.get(r.group) == r.version]

    def resource_for(self, api_version: str, kind: str) -> Resource | None:
        group, _, version = api_version.rpartition("/")
        return next((r for r in self.resources if (r.group, r.version, r.kind) == (group, version, kind)), None)


def with_verbs(resources: list[Resource], *verbs: str) -> list[Resource]:
    return [r for r in resources if set(verbs) <= set(r.verbs)]


async def discover(client: RESTClient) -> Discovery:
    found = Discovery(preferred_versions={"": "v1"})
    group_versions = [("", "v1", "/api/v1")]
    for group in (await client.get_path("/apis")).get("groups") or []:
        found.preferred_versions[group["name"]] = (group.get("preferredVersion") or {}).get("version", "")
        group_versions += [(group["name"], v["version"], f"/apis/{v['groupVersion']}")
                           for v in group.get("versions") or []]
    documents = await asyncio.gather(*(_resource_list(client, url) for _, _, url in group_versions))
    for (group, version, _), document in zip(group_versions, documents, strict=True):
        if isinstance(document, str):
            found.failed[f"{group}/{version}" if group else version] = document
            continue
        for entry in document.get("resources") or []:
            if "/" in entry["name"]:
                continue  # a subresource
            found.resources.append(_known(group, version, entry["name"]) or
                                   Resource(group, version, entry["kind"], entry["name"],
                                            namespaced=bool(entry.get("namespaced")),
                                            verbs=tuple(entry.get("verbs") or ())))
    return found


def _known(group: str, version: str, plural: str) -> Resource | None:
    """The built-in `Resource` of that name: the very value controllers name their informers by, so an
    informer made from discovery is the same shared informer (one watch per resource)."""
    try:
        return resources.builtin(group, version, plural)
    except KeyError:
        return None


async def _resource_list(client: RESTClient, url: str) -> dict[str, object] | str:
    """The APIResourceList at `url`, or the reason it could not be read."""
    try:
        return await client.get_path(url)
    except (errors.APIStatusError, errors.TransportError, ValueError) as error:
        return f"{url}: {error}"
