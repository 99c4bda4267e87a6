"""ValidatingAdmissionWebhook: ValidatingWebhookConfigurations' webhooks may refuse a request, never change it.

Where it sits: in the validating phase of the admission chain, after the object was defaulted and validated
by the registry, just before it is written. As in kube, the matching webhooks are called concurrently (one
slow webhook does not add its latency to the others'); when several refuse, the refusal of the first in
calling order (configurations by name, then list order) is the answer, so the outcome is deterministic.
"""

from __future__ import annotations

import asyncio

from ...interface import Attributes, ClusterState
from .client import WebhookClient
from .config import VALIDATING
from .generic import WebhookPlugin


class ValidatingWebhookPlugin(WebhookPlugin):
    name = "ValidatingAdmissionWebhook"
    mutating = False

    def __init__(self, state: ClusterState, client: WebhookClient | None = None) -> None:
        super().__init__(state, VALIDATING, client)

    async def validate(self, attributes: Attributes) -> None:
        invocations = self.invocations(attributes)
        if len(invocations) == 1:
            await self.call(invocations[0], attributes)
            return
        outcomes = await asyncio.gather(*(self.call(invocation, attributes) for invocation in invocations),
                                        return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
