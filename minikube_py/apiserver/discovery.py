"""Discovery: the documents that tell clients which groups, versions and resources exist.

Two formats, both built once from the kinds registry:

* aggregated discovery (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`): `/api` and `/apis` each answer
  with every version's resources in one response. A client recognises it only by the response
  Content-Type `application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`, and only asks for it
  in its Accept header;
* the legacy documents: `/api` (`APIVersions`), `/apis` (`APIGroupList`), `/apis/<group>` (`APIGroup`) and
  one `APIResourceList` per group-version (`/api/v1`, `/apis/apps/v1`), with subresources listed as
  `pods/status`. `kubectl auth can-i` reads `/api/v1` even when it has aggregated discovery.
"""

from __future__ import annotations

from typing import Any

from ..api.kinds import Registry, Resource, Subresource

AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def wants_aggregated(accept: str) -> bool:
    return "as=APIGroupDiscoveryList" in accept and "g=apidiscovery.k8s.io" in accept and "v=v2" in accept


def _group_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def _resource_verbs(res: Resource) -> list[str]:
    return sorted(res.verbs)


def _aggregated_resource(res: Resource) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": res.plural,
        "responseKind": {"group": "", "version": "", "kind": res.kind},
        "scope": "Namespaced" if res.namespaced else "Cluster",
        "singularResource": res.singular,
        "verbs": _resource_verbs(res),
    }
    if res.short_names:
        entry["shortNames"] = list(res.short_names)
    if res.categories:
        entry["categories"] = list(res.categories)
    if res.subresources:
        entry["subresources"] = [
            {"subresource": sub.name,
             "responseKind": {"group": sub.group, "version": sub.version, "kind": sub.kind},
             "verbs": sorted(sub.verbs)}
            for sub in _subresources(res)
        ]
    return entry


def aggregated(registry: Registry, legacy: bool) -> dict[str, Any]:
    """The APIGroupDiscoveryList for `/api` (legacy=True) or `/apis`."""
    items = []
    for group, versions in registry.group_versions().items():
        if (group == "") != legacy:
            continue
        items.append({
            "metadata": {"name": group, "creationTimestamp": None},
            "versions": [
                {"version": v, "freshness": "Current",
                 "resources": [_aggregated_resource(r) for r in _listed(registry, group, v)]}
                for v in versions
            ],
        })
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
            "items": items}


def _listed(registry: Registry, group: str, version: str) -> list[Resource]:
    return sorted(registry.in_group_version(group, version), key=lambda r: r.plural)


def _subresources(res: Resource) -> list[Subresource]:
    """In name order, as kube lists them (`pods/attach`, `pods/binding`, `pods/exec`, ...)."""
    return sorted(res.subresources, key=lambda sub: sub.name)


def api_versions(address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]}


def api_group(group: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": _group_version(group, v), "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = [api_group(g, vs) for g, vs in registry.group_versions().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    listed = _listed(registry, group, version)
    if not listed:
        return None
    resources: list[dict[str, Any]] = []
    for res in listed:
        entry: dict[str, Any] = {"name": res.plural, "singularName": res.singular, "namespaced": res.namespaced,
                                 "kind": res.kind, "verbs": _resource_verbs(res)}
        if res.short_names:
            entry["shortNames"] = list(res.short_names)
        if res.categories:
            entry["categories"] = list(res.categories)
        resources.append(entry)
        for sub in _subresources(res):
            sub_entry: dict[str, Any] = {"name": f"{res.plural}/{sub.name}", "singularName": "",
                                         "namespaced": res.namespaced, "kind": sub.kind, "verbs": sorted(sub.verbs)}
            if sub.group:
                sub_entry.update(group=sub.group, version=sub.version)
            resources.append(sub_entry)
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": _group_version(group, version),
            "resources": resources}
