"""MutatingAdmissionWebhook: MutatingWebhookConfigurations' webhooks may change the object or refuse it.

Where it sits: in the mutating phase of the admission chain (`chain.ORDER`), after the built-in mutating
plugins. The matching webhooks are called one after the other, configurations by name, then in the order
each lists them; every webhook sees the object as the previous ones left it. A webhook answers with a JSON
patch (`patchType: JSONPatch`, the patch base64-encoded in `patch`), which is applied to the object in
place. A patch that cannot be decoded, or of another type, is a failure to call the webhook (its
`failurePolicy` decides); a patch that does not apply to the object is an internal error, as in kube.

`reinvocationPolicy: IfNeeded`: a webhook that was called, and whose object a later webhook then changed,
is called once more after the first round, so it can see (and adjust to) those changes.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import orjson

from ....api import errors
from ....api.fieldvalidation import DecodeError, as_typed
from ...interface import Attributes, ClusterState
from .client import WebhookClient
from .config import MUTATING
from .generic import WebhookPlugin, convert
from .matching import Invocation
from .review import CallingWebhookError, ReviewResponse


class MutatingWebhookPlugin(WebhookPlugin):
    name = "MutatingAdmissionWebhook"
    mutating = True

    def __init__(self, state: ClusterState, client: WebhookClient | None = None) -> None:
        super().__init__(state, MUTATING, client)

    async def admit(self, attributes: Attributes) -> None:
        invocations = self.invocations(attributes)
        reinvoke: dict[str, bool] = {}  # uid of each IfNeeded webhook called → changed by a later one
        for invocation in invocations:
            if await self._call_and_patch(invocation, attributes):
                reinvoke = dict.fromkeys(reinvoke, True)
            if invocation.webhook.reinvocation_policy == "IfNeeded":
                reinvoke.setdefault(invocation.webhook.uid, False)
        for invocation in invocations:
            if reinvoke.get(invocation.webhook.uid):
                await self._call_and_patch(invocation, attributes)

    async def _call_and_patch(self, invocation: Invocation, attributes: Attributes) -> bool:
        """Call the webhook and apply its patch to `attributes.object`; True when the object changed."""
        response = await self.call(invocation, attributes)
        if response is None or not response.patch:
            return False
        hook = invocation.webhook
        try:
            patch = _decode_patch(response)
        except CallingWebhookError as err:
            self.call_failed(hook, err)
            return False
        if not patch:
            return False
        if attributes.object is None:
            raise errors.internal(f'admission webhook "{hook.name}" attempted to modify the object, which is not '
                                  "supported for this operation")
        patched = _apply(patch, invocation, attributes)
        try:  # decoded into the kind's struct and defaulted, as kube's dispatcher does with a patched object
            patched = as_typed(attributes.kind, patched)
            if attributes.default is not None:
                attributes.default(patched)
        except (DecodeError, TypeError, AttributeError, ValueError, KeyError, IndexError) as err:
            raise errors.internal(f'admission webhook "{hook.name}" returned an object that cannot be decoded: '
                                  f"{err}") from None
        if patched == attributes.object:
            return False
        attributes.object.clear()
        attributes.object.update(patched)
        return True


def _decode_patch(response: ReviewResponse) -> list[Any]:
    if response.patch_type != "JSONPatch":
        raise CallingWebhookError(f'unsupported patch type "{response.patch_type}"')
    try:
        patch = orjson.loads(response.patch)
    except orjson.JSONDecodeError as err:
        raise CallingWebhookError(f"received undecodable patch in webhook response: {err}") from None
    if not isinstance(patch, list) or not all(isinstance(op, dict) for op in patch):
        raise CallingWebhookError("received undecodable patch in webhook response: a JSON patch must be a list "
                                  "of operations")
    return patch


def _apply(patch: list[Any], invocation: Invocation, attributes: Attributes) -> dict[str, Any]:
    """The object with the patch applied at the webhook's version, brought back to the request's version."""
    assert attributes.object is not None
    request = (attributes.group, attributes.version, attributes.resource)
    obj = copy.deepcopy(attributes.object)
    if invocation.converts(attributes):
        obj = convert(obj, request, invocation.resource)
    try:
        patched = jsonpatch.apply_patch(obj, patch)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError,
            IndexError) as err:
        raise errors.internal(str(err)) from None
    if not isinstance(patched, dict):
        raise errors.internal("the patched object is not a JSON object")
    return convert(patched, invocation.resource, request) if invocation.converts(attributes) else patched
