"""DeleteOptions: how a client asks for a delete, and the checks that come before one.

A DELETE may carry a `DeleteOptions` body (kubectl sends `{"propagationPolicy":"Background"}`) or the same
fields as query parameters: `gracePeriodSeconds`, `propagationPolicy` (`Foreground`, `Background`,
`Orphan`), the older `orphanDependents`, `preconditions` (`uid`, `resourceVersion`) and `dryRun`.

Propagation is carried out by the garbage collector in the controller manager; the apiserver's part is to
record the request as a finalizer: `foregroundDeletion` (keep the owner until its dependents are gone) or
`orphan` (detach the dependents first).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...api import errors
from ...api.gofmt import go_quote
from ...api.kinds import Resource

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
_POLICIES = ("Foreground", "Background", "Orphan")
ORPHAN_BY_DEFAULT = {("", "replicationcontrollers"), ("batch", "jobs")}


@dataclass(frozen=True)
class DeleteOptions:
    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    precondition_uid: str | None = None
    precondition_resource_version: str | None = None
    dry_run: bool = False


def parse_delete_options(body: dict[str, Any] | None, query: Mapping[str, str]) -> DeleteOptions:
    body = body or {}
    grace = body.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
    policy = body.get("propagationPolicy", query.get("propagationPolicy"))
    orphan = body.get("orphanDependents", query.get("orphanDependents"))
    if isinstance(orphan, str):
        orphan = orphan.lower() == "true"
    if policy is not None and policy not in _POLICIES:
        raise errors.bad_request(f'propagationPolicy: Unsupported value: "{policy}": supported values: '
                                 '"Foreground", "Background", "Orphan"')
    if policy is not None and orphan is not None:
        raise errors.bad_request("orphanDependents: Invalid value: ...: orphanDependents and "
                                 "propagationPolicy cannot be both set")
    if orphan is not None:
        policy = "Orphan" if orphan else "Background"
    pre = body.get("preconditions") or {}
    dry_run = dry_run_requested(body.get("dryRun"), query.get("dryRun"))
    return DeleteOptions(
        grace_period_seconds=_grace(grace),
        propagation_policy=policy,
        precondition_uid=pre.get("uid"),
        precondition_resource_version=pre.get("resourceVersion"),
        dry_run=dry_run,
    )


def dry_run_requested(in_body: Any, in_query: str | None, options_kind: str = "DeleteOptions") -> bool:
    """`dryRun` from the body (a list, as kubectl sends it in DeleteOptions) or the query, for any write;
    kube validates the write's options after decoding them, so an unknown value is 422 Invalid naming
    `options_kind`, never a write that quietly runs dry (or not)."""
    if in_body is None or in_body == []:
        values = [in_query] if in_query else []
    else:
        values = in_body if isinstance(in_body, list) else [in_body]
    if any(value != "All" for value in values):
        shown = ", ".join(go_quote(str(value)) for value in values)
        problem = errors.FieldError("FieldValueNotSupported", "dryRun",
                                    f'Unsupported value: []string{{{shown}}}: supported values: "All"')
        raise errors.invalid_object(options_kind, "meta.k8s.io", "", [problem])
    return bool(values)


def _grace(value: Any) -> int | None:
    if value is None or value == "":
        return None
    try:
        grace = int(value)
    except (TypeError, ValueError):
        raise errors.bad_request(f'gracePeriodSeconds: Invalid value: "{value}": must be an integer') from None
    # kube treats a negative grace period as "delete now", the same as zero
    return max(grace, 0)


def check_preconditions(resource: Resource, obj: dict[str, Any], options: DeleteOptions) -> None:
    meta = obj["metadata"]
    name = meta.get("name", "")
    if options.precondition_uid and options.precondition_uid != meta.get("uid"):
        raise errors.conflict(resource.group_resource, name,
                              f"Precondition failed: UID in precondition: {options.precondition_uid}, "
                              f"UID in object meta: {meta.get('uid')}")
    wanted_rv = options.precondition_resource_version
    if wanted_rv and wanted_rv != meta.get("resourceVersion"):
        raise errors.conflict(resource.group_resource, name,
                              f"Precondition failed: ResourceVersion in precondition: {wanted_rv}, "
                              f"ResourceVersion in object meta: {meta.get('resourceVersion')}")


def propagation_finalizers(options: DeleteOptions, existing: list[str], resource: Resource) -> list[str]:
    """The object's finalizers after a delete with `options`: at most one of `orphan` / `foregroundDeletion`,
    as the propagation policy asks (a later delete may change its mind); without a policy, the one the object
    already has, else the resource's default (Orphan for v1 ReplicationControllers and batch/v1 Jobs, kept
    for old clients as in kube; Background for everything else)."""
    policy = options.propagation_policy
    if policy is None:
        if FOREGROUND in existing or ORPHAN in existing:
            return existing
        policy = "Orphan" if (resource.group, resource.plural) in ORPHAN_BY_DEFAULT else "Background"
    kept = [f for f in existing if f not in (FOREGROUND, ORPHAN)]
    wanted = {"Foreground": FOREGROUND, "Orphan": ORPHAN}.get(policy)
    return [*kept, wanted] if wanted else kept
