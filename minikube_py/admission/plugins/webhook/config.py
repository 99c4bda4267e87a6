"""The webhooks the cluster has configured: MutatingWebhookConfigurations or ValidatingWebhookConfigurations,
read from the watch caches and turned into `Webhook` values the dispatcher can match and call.

Where it sits: each webhook plugin owns one `WebhookSource`; on every request it asks `webhooks()`, which
lists the configurations from the `ClusterState` (so a configuration takes effect as soon as the watch
cache has it) and rebuilds the parsed list only when a configuration was added, changed or removed.

The order is kube's: configurations sorted by name, then each configuration's webhooks in the order it
lists them. Objects are defaulted and validated on their way in (`api/defaults/admissionregistration.py`,
`api/validation/admissionregistration.py`), so fields are read here without re-checking them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ....api.selectors import LabelSelector
from ...interface import ClusterState

GROUP = "admissionregistration.k8s.io"
MUTATING = "mutatingwebhookconfigurations"
VALIDATING = "validatingwebhookconfigurations"
DEFAULT_TIMEOUT_SECONDS = 10


@dataclass(frozen=True)
class Webhook:
    """One webhook of a configuration (kube's `WebhookAccessor`); `uid` tells webhooks with the same name in
    different configurations apart."""

    name: str
    configuration: str
    uid: str
    rules: tuple[Mapping[str, Any], ...]
    namespace_selector: LabelSelector
    object_selector: LabelSelector
    failure_policy: str
    match_policy: str
    side_effects: str
    timeout_seconds: int
    admission_review_versions: tuple[str, ...]
    client_config: Mapping[str, Any]
    reinvocation_policy: str = "Never"

    @property
    def fails_open(self) -> bool:
        """`failurePolicy: Ignore`: a webhook that cannot be called lets the request through."""
        return self.failure_policy == "Ignore"


def webhook_from_api(hook: Mapping[str, Any], configuration: str, index: int) -> Webhook:
    """A `Webhook` from one entry of a configuration's `webhooks` list (already defaulted)."""
    return Webhook(
        name=str(hook.get("name") or ""),
        configuration=configuration,
        uid=f"{configuration}/{index}",
        rules=tuple(rule for rule in hook.get("rules") or () if isinstance(rule, Mapping)),
        namespace_selector=LabelSelector.from_api(hook.get("namespaceSelector") or {}),
        object_selector=LabelSelector.from_api(hook.get("objectSelector") or {}),
        failure_policy=str(hook.get("failurePolicy") or "Fail"),
        match_policy=str(hook.get("matchPolicy") or "Equivalent"),
        side_effects=str(hook.get("sideEffects") or ""),
        timeout_seconds=int(hook.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS),
        admission_review_versions=tuple(str(v) for v in hook.get("admissionReviewVersions") or ()),
        client_config=hook.get("clientConfig") or {},
        reinvocation_policy=str(hook.get("reinvocationPolicy") or "Never"),
    )


class WebhookSource:
    """The webhooks of one configuration resource (`MUTATING` or `VALIDATING`), in calling order."""

    def __init__(self, state: ClusterState, resource: str) -> None:
        self.state = state
        self.resource = resource
        self._seen: tuple[tuple[str, str], ...] = ()
        self._webhooks: list[Webhook] = []

    def webhooks(self) -> list[Webhook]:
        configurations = self.state.list(GROUP, self.resource)
        seen = tuple(sorted((_meta(c).get("name", ""), _meta(c).get("resourceVersion", "")) for c in configurations))
        if seen != self._seen:
            self._webhooks = _parse(configurations)
            self._seen = seen
        return self._webhooks


def _parse(configurations: list[dict[str, Any]]) -> list[Webhook]:
    webhooks = []
    for configuration in sorted(configurations, key=lambda c: str(_meta(c).get("name", ""))):
        name = str(_meta(configuration).get("name", ""))
        hooks = [hook for hook in configuration.get("webhooks") or () if isinstance(hook, Mapping)]
        webhooks += [webhook_from_api(hook, name, i) for i, hook in enumerate(hooks)]
    return webhooks


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}
