"""Validation and defaults of MutatingWebhookConfiguration and ValidatingWebhookConfiguration objects."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minikube_py.api.defaults import apply_defaults
from minikube_py.api.kinds import default_registry
from minikube_py.api.validation import validate_create

GROUP = "admissionregistration.k8s.io"
REGISTRY = default_registry()
MUTATING = REGISTRY.lookup(GROUP, "v1", "mutatingwebhookconfigurations")
VALIDATING = REGISTRY.lookup(GROUP, "v1", "validatingwebhookconfigurations")


def hook(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "check.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://127.0.0.1:8443/check"},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def config(*hooks: dict[str, Any], kind: str = "ValidatingWebhookConfiguration") -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": "cfg"}, "webhooks": list(hooks)}


def errors_of(obj: dict[str, Any], resource: Any = VALIDATING) -> list[str]:
    obj = copy.deepcopy(obj)
    apply_defaults(resource, obj)
    return [e.describe() for e in validate_create(resource, obj)]


def test_a_complete_configuration_is_valid() -> None:
    assert errors_of(config(hook())) == []
    assert errors_of(config(hook(), kind="MutatingWebhookConfiguration"), MUTATING) == []


def test_defaults_fill_policies_selectors_timeout_and_scope() -> None:
    obj = config(hook(clientConfig={"service": {"name": "s", "namespace": "n"}}),
                 kind="MutatingWebhookConfiguration")
    apply_defaults(MUTATING, obj)
    got = obj["webhooks"][0]
    assert (got["failurePolicy"], got["matchPolicy"], got["timeoutSeconds"], got["reinvocationPolicy"]) == (
        "Fail", "Equivalent", 10, "Never")
    assert got["namespaceSelector"] == {} and got["objectSelector"] == {}
    assert got["rules"][0]["scope"] == "*"
    assert got["clientConfig"]["service"]["port"] == 443
    assert "sideEffects" in got  # given, never defaulted in v1


@pytest.mark.parametrize("webhook, expected", [
    (hook(sideEffects=None), "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"),
    (hook(sideEffects="Some"), 'webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", '
                               '"NoneOnDryRun"'),
    (hook(failurePolicy="Sometimes"), 'webhooks[0].failurePolicy: Unsupported value: "Sometimes": supported '
                                      'values: "Fail", "Ignore"'),
    (hook(matchPolicy="Loose"), 'webhooks[0].matchPolicy: Unsupported value: "Loose": supported values: '
                                '"Equivalent", "Exact"'),
    (hook(timeoutSeconds=31), "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between "
                              "1 and 30 seconds"),
    (hook(timeoutSeconds=0), "webhooks[0].timeoutSeconds: Invalid value: 0: the timeout value must be between "
                             "1 and 30 seconds"),
    (hook(admissionReviewVersions=[]), "webhooks[0].admissionReviewVersions: Required value: must specify one "
                                       "of v1, v1beta1"),
    (hook(admissionReviewVersions=["v2"]), 'webhooks[0].admissionReviewVersions: Invalid value: []string{"v2"}: '
                                           "must include at least one of v1, v1beta1"),
    (hook(name="check"), 'webhooks[0].name: Invalid value: "check": should be a domain with at least three '
                         "segments separated by dots"),
    (hook(name=""), "webhooks[0].name: Required value"),
    (hook(clientConfig={}), "webhooks[0].clientConfig: Required value: exactly one of url or service is "
                            "required"),
    (hook(clientConfig={"url": "https://a.example.com/", "service": {"name": "s", "namespace": "n"}}),
     "webhooks[0].clientConfig: Required value: exactly one of url or service is required"),
    (hook(clientConfig={"url": "http://a.example.com/"}), 'webhooks[0].clientConfig.url: Invalid value: "http": '
                                                          "'https' is the only allowed URL scheme; desired "
                                                          "format: https://host[/path]"),
    (hook(clientConfig={"url": "https://a.example.com/?x=1"}),
     'webhooks[0].clientConfig.url: Invalid value: "x=1": query parameters are not permitted in the URL'),
    (hook(clientConfig={"service": {"name": "s"}}),
     "webhooks[0].clientConfig.service.namespace: Required value: service namespace is required"),
    (hook(clientConfig={"service": {"name": "s", "namespace": "n", "path": "no-slash"}}),
     'webhooks[0].clientConfig.service.path: Invalid value: "no-slash": must start with a \'/\''),
    (hook(rules=[{"operations": ["CREATE", "*"], "apiGroups": [""], "apiVersions": ["v1"],
                  "resources": ["pods"]}]),
     'webhooks[0].rules[0].operations: Invalid value: []admissionregistration.OperationType{"CREATE", "*"}: '
     "if '*' is present, must not specify other operations"),
    (hook(rules=[{"operations": ["PATCH"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]),
     'webhooks[0].rules[0].operations[0]: Unsupported value: "PATCH": supported values: "*", "CONNECT", '
     '"CREATE", "DELETE", "UPDATE"'),
    (hook(rules=[{"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": []}]),
     "webhooks[0].rules[0].resources: Required value"),
    (hook(rules=[{"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["*/*", "pods"]}]),
     'webhooks[0].rules[0].resources: Invalid value: []string{"*/*", "pods"}: if \'*/*\' is present, must not '
     "specify other resources"),
    (hook(rules=[{"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"],
                  "scope": "Everywhere"}]),
     'webhooks[0].rules[0].scope: Unsupported value: "Everywhere": supported values: "*", "Cluster", '
     '"Namespaced"'),
    (hook(namespaceSelector={"matchExpressions": [{"key": "a", "operator": "Near"}]}),
     'webhooks[0].namespaceSelector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector '
     "operator"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_a_bad_webhook_is_refused_with_kube_s_message(webhook: dict[str, Any], expected: str) -> None:
    assert expected in errors_of(config(webhook))


def test_webhook_names_must_be_unique_within_a_configuration() -> None:
    assert 'webhooks[1].name: Duplicate value: "check.example.com"' in errors_of(config(hook(), hook()))


def test_reinvocation_policy_is_checked_on_mutating_webhooks() -> None:
    got = errors_of(config(hook(reinvocationPolicy="Always"), kind="MutatingWebhookConfiguration"), MUTATING)
    assert got == ['webhooks[0].reinvocationPolicy: Unsupported value: "Always": supported values: "IfNeeded", '
                   '"Never"']
