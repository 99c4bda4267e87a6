"""What the mutating and the validating webhook plugins share: finding the webhooks to call, and calling one.

Where it sits: `MutatingWebhookPlugin` (mutating.py) and `ValidatingWebhookPlugin` (validating.py) extend
`WebhookPlugin`. For a request they ask `invocations` which configured webhooks apply (`matching.py`), then
`call` each: a dry-run request refuses webhooks with side effects, the object goes out at the version the
webhook's rule names, and a failure to call the webhook is handled by its `failurePolicy` (`Ignore`: log it
and let the request through, `Fail`: refuse it with a 500). Warnings the webhook returns are added to the
request's warnings, its audit annotations to the request's, under `<webhook name>/<key>`.

Usage rule: plugins hold no per-request state; everything about one request lives in its `Attributes`.
"""

from __future__ import annotations

import logging
from typing import Any

from ....api.conversion import from_storage, to_storage
from ...interface import Attributes, ClusterState
from .client import WebhookClient
from .config import Webhook, WebhookSource
from .matching import Invocation, builtin_resource, exempt, invocation_for
from .review import (
    CallingWebhookError,
    ReviewResponse,
    admission_review,
    calling_failed,
    denied,
    dry_run_unsupported,
    review_version,
    verify_response,
)

log = logging.getLogger(__name__)
NO_SIDE_EFFECTS_ON_DRY_RUN = frozenset({"None", "NoneOnDryRun"})


class WebhookPlugin:
    """The generic webhook plugin over one configuration resource; `mutating` picks the response rules."""

    name: str
    mutating: bool

    def __init__(self, state: ClusterState, resource: str, client: WebhookClient | None = None) -> None:
        self.state = state
        self.source = WebhookSource(state, resource)
        self.client = client or WebhookClient(state)

    def handles(self, operation: str) -> bool:
        # Without any configured webhook the plugin has nothing to do (and the registry skips its work).
        return bool(self.source.webhooks())

    def invocations(self, attributes: Attributes) -> list[Invocation]:
        """The webhooks to call for this request, in calling order."""
        if exempt(attributes):
            return []
        found = (invocation_for(hook, attributes, self.state) for hook in self.source.webhooks())
        return [invocation for invocation in found if invocation is not None]

    async def call(self, invocation: Invocation, attributes: Attributes) -> ReviewResponse | None:
        """Call one webhook. Raises the webhook's refusal (or a failing-closed error); returns None when the
        call failed and the webhook fails open."""
        hook = invocation.webhook
        if attributes.dry_run and hook.side_effects not in NO_SIDE_EFFECTS_ON_DRY_RUN:
            raise dry_run_unsupported(hook.name)
        try:
            version = review_version(invocation)
            obj, old = (versioned(invocation, attributes, o) for o in (attributes.object, attributes.old_object))
            uid, review = admission_review(version, invocation, attributes, obj, old)
            response = verify_response(await self.client.post(hook, review), uid, version, self.mutating)
        except CallingWebhookError as err:
            self.call_failed(hook, err)
            return None
        attributes.warnings.extend(response.warnings)
        for key, value in response.audit_annotations.items():
            attributes.audit_annotations[f"{hook.name}/{key}"] = value
        if not response.allowed:
            raise denied(hook.name, response.status)
        return response

    def call_failed(self, hook: Webhook, err: CallingWebhookError) -> None:
        """failurePolicy: Ignore logs the failure and carries on; Fail refuses the request."""
        if hook.fails_open:
            log.warning("Failed calling webhook, failing open %s: %s", hook.name, err)
            return
        log.warning("Failed calling webhook, failing closed %s: %s", hook.name, err)
        raise calling_failed(hook.name, str(err)) from None


def versioned(invocation: Invocation, attributes: Attributes, obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """`obj` (at the request's version) as the webhook sees it: at the invocation's version."""
    if obj is None or not invocation.converts(attributes):
        return obj
    return convert(obj, (attributes.group, attributes.version, attributes.resource), invocation.resource)


def convert(obj: dict[str, Any], source: tuple[str, str, str], target: tuple[str, str, str]) -> dict[str, Any]:
    """An object of one built-in resource version as another version of the same stored resource."""
    source_resource, target_resource = builtin_resource(*source), builtin_resource(*target)
    assert source_resource is not None and target_resource is not None, (source, target)
    return from_storage(target_resource, to_storage(source_resource, obj))
