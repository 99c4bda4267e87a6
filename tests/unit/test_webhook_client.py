"""How the webhook client resolves a service reference and what it says when it cannot."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.admission.plugins.webhook.client import resolve_service
from minikube_py.admission.plugins.webhook.review import CallingWebhookError


class State:
    def __init__(self, **objects: dict[str, Any]) -> None:
        self.objects = objects

    def get(self, group: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get(resource)

    def list(self, group: str, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        return []


SERVICE = {"spec": {"type": "ClusterIP", "ports": [{"name": "https", "port": 443, "targetPort": 8443}]}}
ENDPOINTS = {"subsets": [{"addresses": [{"ip": "10.244.0.7"}], "ports": [{"name": "https", "port": 8443}]}]}


def test_a_service_resolves_to_a_ready_endpoint_on_the_matching_port() -> None:
    state = State(services=SERVICE, endpoints=ENDPOINTS)
    assert resolve_service(state, "ns", "hook", 443) == "10.244.0.7:8443"  # type: ignore[arg-type]


def test_an_external_name_service_resolves_to_its_name() -> None:
    state = State(services={"spec": {"type": "ExternalName", "externalName": "hooks.example.com"}})
    assert resolve_service(state, "ns", "hook", 443) == "hooks.example.com:443"  # type: ignore[arg-type]


@pytest.mark.parametrize("objects, port, why", [
    ({}, 443, 'service "hook" not found'),
    ({"services": SERVICE}, 444, 'no service port 444 found for service "hook"'),
    ({"services": SERVICE}, 443, 'endpoints "hook" not found'),
    ({"services": SERVICE, "endpoints": {"subsets": [{"ports": [{"name": "https", "port": 8443}]}]}}, 443,
     'no endpoints available for service "hook"'),
])
def test_an_unresolvable_service_is_a_failure_to_call(objects: dict[str, Any], port: int, why: str) -> None:
    with pytest.raises(CallingWebhookError, match=why):
        resolve_service(State(**objects), "ns", "hook", port)  # type: ignore[arg-type]
