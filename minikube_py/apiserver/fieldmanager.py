"""Field managers of requests: who is writing, and server-side apply requests.

Every create, update and patch is recorded in the object's `metadata.managedFields` under its field manager
(`api/managedfields`). This module turns a request into the `FieldTracker` the registry runs:

* the manager is `?fieldManager=` or, without one, the User-Agent's product name; a name longer than
  128 characters or with unprintable characters is 422 (`CreateOptions.meta.k8s.io "" is invalid`);
* `?force=` belongs to apply alone (422 on other patches), and an apply must name its manager (422);
* an apply body (`application/apply-patch+yaml`: YAML or JSON) is a partial object of the URL's kind:
  its apiVersion and kind must be the URL's (400), it may not carry managedFields (400), and its name
  must be the URL's (400).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..api import errors
from ..api.kinds import Resource
from ..api.managedfields import FieldTracker, Type, manager_name, type_of_crd, type_of_kind, zero_object
from ..api.managedfields.manager import MAX_MANAGER_LENGTH
from ..api.managedfields.schema import UNTYPED_TYPE
from .registry.generic import ResourceStore
from .registry.strategy import CustomResourceStrategy


def tracker_for(store: ResourceStore, query: Mapping[str, str], user_agent: str, options_kind: str, *,
                subresource: str = "", config: dict[str, Any] | None = None) -> FieldTracker:
    """The field manager of one write to `store`'s resource (an apply when `config` is given)."""
    check_write_options(query, options_kind, apply=config is not None)
    resource = store.resource
    return FieldTracker(shape_of(store), resource.api_version, manager_name(query.get("fieldManager", ""), user_agent),
                        zero_object(resource.api_version, resource.kind, resource.custom),
                        subresource=subresource, status_subresource=resource.has_status(), config=config,
                        force=query.get("force") == "true")


def shape_of(store: ResourceStore) -> Type:
    strategy = store.strategy
    if isinstance(strategy, CustomResourceStrategy):
        return type_of_crd(strategy.schema.root)
    resource = store.resource
    return type_of_kind(resource.group, resource.version, resource.kind) or UNTYPED_TYPE


def check_write_options(query: Mapping[str, str], options_kind: str, *, apply: bool) -> None:
    manager = query.get("fieldManager", "")
    problems = []
    if "force" in query:
        if not apply:
            problems.append(errors.forbidden("force", "may not be specified for non-apply patch"))
        elif query["force"] not in ("true", "false"):
            problems.append(errors.invalid("force", query["force"], "must be true or false"))
    if apply and not manager:
        problems.append(errors.required("fieldManager", "is required for apply patch"))
    if len(manager) > MAX_MANAGER_LENGTH:
        problems.append(errors.too_long("fieldManager", MAX_MANAGER_LENGTH))
    for position, char in enumerate(manager):
        if not char.isprintable():
            problems.append(errors.invalid("fieldManager", manager,
                                           f"invalid character U+{ord(char):04X} (at position {position})"))
    if problems:
        raise errors.invalid_object(options_kind, "meta.k8s.io", "", problems)


def check_apply_config(config: dict[str, Any], resource: Resource, name: str) -> None:
    """400 for an applied configuration that is not a partial object of `resource` named `name`."""
    if config.get("apiVersion") != resource.api_version:
        raise errors.bad_request(f"Incorrect version specified in apply patch. Specified patch version: "
                                 f"{config.get('apiVersion') or ''}, expected: {resource.api_version}")
    if config.get("kind") != resource.kind:
        raise errors.bad_request(f"Incorrect kind specified in apply patch. Specified patch kind: "
                                 f"{config.get('kind') or ''}, expected: {resource.kind}")
    meta = config.get("metadata")
    if not isinstance(meta, dict):
        raise errors.bad_request("an apply patch must have metadata")
    if meta.get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil")
    if meta.get("name") not in (None, "", name):
        raise errors.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL "
                                 f"({name})")
