"""`pods/eviction`: a pod deletion that first asks the pod's PodDisruptionBudget (what `kubectl drain` uses).

    POST /api/v1/namespaces/{ns}/pods/{name}/eviction     body: policy/v1 Eviction
                                                          {"metadata": {"name": ...}, "deleteOptions": {...}}

A plain DELETE always succeeds; an eviction is refused while it would take the pods a budget protects below
its minimum. The budget's numbers are the disruption controller's (kcm/controllers/disruption.py): this
handler only reads `status.disruptionsAllowed`, and spends one of them *before* deleting, by decrementing it
and recording the pod in `status.disruptedPods`, written with the budget's resourceVersion (a conflict
re-reads the budget and checks again), so two concurrent evictions can never spend the same disruption. The
controller recomputes the status afterwards and forgets the entry once the pod is gone.

The answers, as kube's:
* allowed: the pod is marked with the condition `DisruptionTarget` (reason `EvictionByEvictionAPI`) and
  deleted gracefully with the Eviction's `deleteOptions`; 201 with a Success Status;
* refused: 429 TooManyRequests "Cannot evict pod as it would violate the pod's disruption budget.", with a
  `DisruptionBudget` cause "The disruption budget NAME needs N healthy pods and has M currently" (kubectl
  drain prints it and retries every 5 s); also while the controller has not yet seen the budget's latest
  generation ("... is still being processed by the server.", retry after 10 s);
* a pod two budgets select: 500 "This pod has more than one PodDisruptionBudget, which the eviction
  subresource does not support.";
* no budget, and pods whose loss disrupts nothing (Pending, Succeeded, Failed, or already being deleted):
  deleted without asking, with a resourceVersion precondition so a pod that just started running is not
  deleted on a stale decision;
* a pod that is not Ready does not count as healthy: it may go without spending the budget while the budget
  is met (`unhealthyPodEvictionPolicy: IfHealthyBudget`, the default) or always (`AlwaysAllow`).
Authorization happened before (verb `create` on `pods/eviction`); the delete itself is not authorized again.
"""

from __future__ import annotations

import asyncio
import copy
import random
from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..admission.interface import CREATE
from ..api import errors, fieldvalidation
from ..api.selectors import LabelSelector
from ..api.timestamps import time_string
from . import responses
from .registry.deletion import DeleteOptions, dry_run_requested, parse_delete_options
from .registry.generic import ResourceStore
from .registry.listing import parse_list_options
from .request import RequestInfo

EVICTION_GVK = ("policy", "v1", "Eviction")
ACCEPTED_VERSIONS = ("policy/v1", "policy/v1beta1")
MAX_DISRUPTED_PODS = 2000  # entries the controller has not confirmed yet, past which evictions stop
CONFLICT_RETRIES = 20
TERMINAL_PHASES = ("Succeeded", "Failed")
REFUSED = "Cannot evict pod as it would violate the pod's disruption budget."
SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


async def handle(handler: Any, request: Request, info: RequestInfo) -> Response:
    """Called by `ResourceHandler._create` for a POST to `pods/{name}/eviction`."""
    eviction, warnings = await handler._read_object(request, None, "CreateOptions", EVICTION_GVK)
    check_eviction(eviction, info)
    query_dry_run = dry_run_requested(None, request.query_params.get("dryRun"), "CreateOptions")
    options = delete_options(eviction, query_dry_run)
    pods: ResourceStore = handler.stores[("", "v1", "pods")]
    admission = handler.admission_for(request, CREATE, info, pods, "CreateOptions", options.dry_run,
                                      name=info.name, kind=EVICTION_GVK)
    if admission is not None:
        await admission.mutate(eviction, None)
        await admission.validate(eviction, None)
    budgets: ResourceStore = handler.stores[("policy", "v1", "poddisruptionbudgets")]
    status = await Eviction(pods, budgets, info.namespace, info.name, options).run()
    response = responses.json_response(status, int(status["code"]))
    for text in warnings:
        response.headers.append("Warning", fieldvalidation.warning_header(text))
    return response


def check_eviction(eviction: dict[str, Any], info: RequestInfo) -> None:
    api_version, kind = eviction.get("apiVersion"), eviction.get("kind")
    if api_version not in (None, "", *ACCEPTED_VERSIONS) or kind not in (None, "", "Eviction"):
        raise errors.bad_request(f"not a Eviction object: {kind} of {api_version}")
    meta = eviction.get("metadata") or {}
    if meta.get("namespace") and meta["namespace"] != info.namespace:
        raise errors.bad_request("the namespace of the provided object does not match the namespace sent on "
                                 "the request")
    if meta.get("name") != info.name:
        raise errors.bad_request("name in URL does not match name in Eviction object")


def delete_options(eviction: dict[str, Any], query_dry_run: bool) -> DeleteOptions:
    """The Eviction's DeleteOptions, with the request's dryRun when they have none (kube's propagateDryRun)."""
    body = eviction.get("deleteOptions")
    options = parse_delete_options(body if isinstance(body, dict) else None, {})
    in_body = bool((body or {}).get("dryRun"))
    if in_body and query_dry_run and not options.dry_run:
        raise errors.internal("Non-matching dry-run options in request and content")
    return replace(options, dry_run=options.dry_run or query_dry_run)


class Eviction:
    """One eviction request: the pod's fate decided against its budget."""

    def __init__(self, pods: ResourceStore, budgets: ResourceStore, namespace: str, name: str,
                 options: DeleteOptions) -> None:
        self.pods = pods
        self.budgets = budgets
        self.namespace = namespace
        self.name = name
        self.options = options

    async def run(self) -> dict[str, Any]:
        pod = await self._pod_or_delete_freely()
        if pod is None:
            return SUCCESS
        budgets = await self.budgets_of(pod)
        if len(budgets) > 1:
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 500,
                    "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                               "does not support."}
        if not budgets:
            await self.mark_and_delete(self.options)
            return SUCCESS
        budget = budgets[0]
        if _ready(pod) or not unhealthy_may_go(budget):
            await self.spend(budget)
            await self.mark_and_delete(self.options)
            return SUCCESS
        # an unhealthy pod goes without spending the budget, but only as we judged it: not if it became
        # Ready meanwhile (then the client is told to try again)
        pinned = replace(self.options, precondition_resource_version=pod["metadata"]["resourceVersion"])
        try:
            await self.mark_and_delete(pinned)
        except errors.APIError as err:
            if err.code == 409 and not self.options.precondition_resource_version:
                raise too_many_requests_stale(budget["metadata"]["name"]) from None
            raise
        return SUCCESS

    async def _pod_or_delete_freely(self) -> dict[str, Any] | None:
        """The pod to judge, or None once a pod that needs no judgement has been deleted. A conflict
        (the pod changed between the read and the delete) reads it again, unless the client pinned a version."""
        for _ in range(CONFLICT_RETRIES):
            pod = await self.pods.get(self.namespace, self.name)
            if not _can_ignore_budget(pod):
                return pod
            options = self.options
            if _enforce_resource_version(pod) and not options.precondition_resource_version:
                options = replace(options, precondition_resource_version=pod["metadata"]["resourceVersion"])
            try:
                await self.mark_and_delete(options)
            except errors.APIError as err:
                if err.code != 409 or self.options.precondition_resource_version:
                    raise
                continue
            return None
        raise errors.timeout(f"couldn't evict pod {self.name!r} due to conflicts")

    async def budgets_of(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        page = await self.budgets.list(self.namespace, parse_list_options(self.budgets.resource, {}))
        labels = pod["metadata"].get("labels")
        found = []
        for budget in page.objects:
            try:
                selector = LabelSelector.from_api((budget.get("spec") or {}).get("selector"))
            except errors.APIError:
                continue  # an invalid selector matches no pod
            if selector.matches(labels):
                found.append(budget)
        return found

    async def spend(self, budget: dict[str, Any]) -> None:
        """Take one disruption from `budget`, re-reading it after each lost race."""
        name = budget["metadata"]["name"]
        for attempt in range(CONFLICT_RETRIES):
            if attempt:
                await asyncio.sleep(random.uniform(0.01, 0.05))
                budget = await self.budgets.get(self.namespace, name)
            try:
                await self.check_and_decrement(budget)
                return
            except errors.APIError as err:
                if err.code != 409:
                    raise
        raise errors.APIError(504, "Timeout", f'couldn\'t update PodDisruptionBudget "{name}" due to conflicts',
                              {"retryAfterSeconds": 10}, {"Retry-After": "10"})

    async def check_and_decrement(self, budget: dict[str, Any]) -> None:
        meta, status = budget["metadata"], budget.get("status") or {}
        name = meta["name"]
        if status.get("observedGeneration", 0) < meta.get("generation", 0):
            raise too_many_requests_stale(name)
        allowed = int(status.get("disruptionsAllowed", 0))
        if allowed < 0:
            raise errors.forbidden_object("poddisruptionbudget.policy", name, "pdb disruptions allowed is negative")
        if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
            raise errors.forbidden_object("poddisruptionbudget.policy", name, "DisruptedPods map too big - too many "
                                          "evictions not confirmed by PDB controller")
        if allowed == 0:
            raise too_many_requests(f"The disruption budget {name} needs {status.get('desiredHealthy', 0)} healthy "
                                    f"pods and has {status.get('currentHealthy', 0)} currently")
        if self.options.dry_run:
            return
        updated = copy.deepcopy(budget)
        new_status = updated.setdefault("status", {})
        new_status["disruptionsAllowed"] = allowed - 1
        if allowed == 1:
            _set_insufficient(new_status)
        new_status.setdefault("disruptedPods", {})[self.name] = time_string()
        await self.budgets.update(self.namespace, name, updated, subresource="status")

    async def mark_and_delete(self, options: DeleteOptions) -> None:
        """Record why the pod goes (condition DisruptionTarget), then delete it with `options`."""
        if not options.dry_run:
            updated = await self.pods.guaranteed_update(self.namespace, self.name, lambda pod: _mark(pod, options),
                                                        subresource="status")
            if options.precondition_resource_version:  # our own write moved the version on
                options = replace(options, precondition_resource_version=updated["metadata"]["resourceVersion"])
        await self.pods.delete(self.namespace, self.name, options)


def unhealthy_may_go(budget: dict[str, Any]) -> bool:
    """Whether a pod that is not Ready may be evicted without spending a disruption."""
    if (budget.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
        return True
    status = budget.get("status") or {}
    desired = int(status.get("desiredHealthy", 0))
    return desired > 0 and int(status.get("currentHealthy", 0)) >= desired


def too_many_requests(cause: str, retry_after: int = 0) -> errors.APIError:
    details: dict[str, Any] = {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
    headers = {}
    if retry_after:
        details = {"retryAfterSeconds": retry_after, **details}
        headers = {"Retry-After": str(retry_after)}
    return errors.APIError(429, "TooManyRequests", REFUSED, details, headers)


def too_many_requests_stale(name: str) -> errors.APIError:
    return too_many_requests(f"The disruption budget {name} is still being processed by the server.", 10)


def _mark(pod: dict[str, Any], options: DeleteOptions) -> dict[str, Any]:
    meta = pod["metadata"]
    if options.precondition_uid and options.precondition_uid != meta.get("uid"):
        raise errors.conflict("Pod", meta["name"], f"the UID in the precondition ({options.precondition_uid}) does "
                              f"not match the UID in record ({meta.get('uid')}). The object might have been "
                              "deleted and then recreated")
    wanted = options.precondition_resource_version
    if wanted and wanted != meta.get("resourceVersion"):
        raise errors.conflict("Pod", meta["name"], f"the ResourceVersion in the precondition ({wanted}) does not "
                              f"match the ResourceVersion in record ({meta.get('resourceVersion')}). The object "
                              "might have been modified")
    conditions = pod.setdefault("status", {}).setdefault("conditions", [])
    wanted_condition = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                        "message": "Eviction API: evicting"}
    for condition in conditions:
        if condition.get("type") == "DisruptionTarget":
            if condition.get("status") != "True":
                condition["lastTransitionTime"] = time_string()
            condition.update(wanted_condition)
            return pod
    conditions.append({**wanted_condition, "lastProbeTime": None, "lastTransitionTime": time_string()})
    return pod


def _set_insufficient(status: dict[str, Any]) -> None:
    """The budget has just been spent: DisruptionAllowed turns False (kube's UpdateDisruptionAllowedCondition)."""
    conditions = status.setdefault("conditions", [])
    wanted = {"type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods", "message": "",
              "observedGeneration": status.get("observedGeneration", 0)}
    for condition in conditions:
        if condition.get("type") == "DisruptionAllowed":
            if condition.get("status") != "False":
                condition["lastTransitionTime"] = time_string()
            condition.update(wanted)
            return
    conditions.append({**wanted, "lastTransitionTime": time_string()})


def _ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _can_ignore_budget(pod: dict[str, Any]) -> bool:
    """Pods whose deletion disrupts nothing: not started, finished, or already going."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in (*TERMINAL_PHASES, "Pending") or bool(pod["metadata"].get("deletionTimestamp"))


def _enforce_resource_version(pod: dict[str, Any]) -> bool:
    """A Pending pod may start running meanwhile: delete it only as it was read."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in TERMINAL_PHASES and not pod["metadata"].get("deletionTimestamp")
