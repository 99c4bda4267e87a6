"""Defaults for admissionregistration.k8s.io/v1: MutatingWebhookConfiguration and ValidatingWebhookConfiguration.

Each webhook fails closed (`failurePolicy: Fail`), matches equivalent versions of a resource
(`matchPolicy: Equivalent`), selects every namespace and object (empty selectors) and waits 10 seconds; a
mutating webhook is not called again after later mutations (`reinvocationPolicy: Never`). Rules cover both
scopes (`scope: "*"`) and a service reference uses port 443. `sideEffects` and `admissionReviewVersions`
have no default in v1: the webhook's author must say them, and validation requires them.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api.defaults.fields import child, dicts, set_default

DEFAULT_TIMEOUT_SECONDS = 10


def validating_webhook_configuration(obj: dict[str, Any]) -> None:
    for hook in dicts(obj, "webhooks"):
        _webhook(hook)


def mutating_webhook_configuration(obj: dict[str, Any]) -> None:
    for hook in dicts(obj, "webhooks"):
        _webhook(hook)
        set_default(hook, "reinvocationPolicy", "Never")


def _webhook(hook: dict[str, Any]) -> None:
    set_default(hook, "failurePolicy", "Fail")
    set_default(hook, "matchPolicy", "Equivalent")
    set_default(hook, "namespaceSelector", {})
    set_default(hook, "objectSelector", {})
    set_default(hook, "timeoutSeconds", DEFAULT_TIMEOUT_SECONDS)
    for rule in dicts(hook, "rules"):
        set_default(rule, "scope", "*")
    service = child(child(hook, "clientConfig", create=False), "service", create=False)
    if service:
        set_default(service, "port", 443)
