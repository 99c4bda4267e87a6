"""`kubectl explain` with the real kubectl against a cluster started with `mkpy up`.

kubectl builds the whole explanation from our OpenAPI v3 documents (its template walks the schemas), so
what it prints is what a real 1.32 cluster prints when our documents carry the same schemas. The tests
check the printed structure exactly (headers, field names, type hints, `-required-`) and compare the
descriptions, unwrapped, with the upstream definitions they come from, read here from the same package the
server reads them from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from minikube_py.api import schemas
from tests.e2e.conftest import KubeCluster

pytestmark = pytest.mark.e2e

FIELD_LINE = re.compile(r"^(\s*)(\S+)\t<(.+?)>( -required-)?$")


@dataclass
class Explanation:
    """kubectl explain's output, cut into its parts."""

    header: list[str]
    description: str  # unwrapped: words joined by single spaces
    fields: list[tuple[int, str, str, bool]] = field(default_factory=list)  # (indent, name, type, required)
    field_descriptions: dict[str, str] = field(default_factory=dict)


def parse(output: str) -> Explanation:
    head, _, rest = output.partition("DESCRIPTION:\n")
    description, _, fields = rest.partition("FIELDS:\n")
    explanation = Explanation([line for line in head.splitlines()], words(description))
    current = ""
    for line in fields.splitlines():
        match = FIELD_LINE.match(line)
        if match:
            indent, name, kind, required = match.groups()
            explanation.fields.append((len(indent), name, kind, bool(required)))
            current = name
        elif line.strip():
            explanation.field_descriptions[current] = (explanation.field_descriptions.get(current, "") + " "
                                                       + line.strip()).strip()
    return explanation


def words(text: str) -> str:
    return " ".join(text.split())


def definition(name: str) -> dict[str, Any]:
    return schemas.openapi_schema(name)


def referenced(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref") or (schema.get("allOf") or [{}])[0].get("$ref")
    return ref.removeprefix(schemas.OPENAPI_REF_PREFIX) if ref else None


def type_hint(schema: dict[str, Any]) -> str:
    """The type kubectl prints for a field: `string`, `[]Container`, `map[string]Quantity`, `Object`."""
    if "items" in schema:
        return "[]" + type_hint(schema["items"])
    if isinstance(schema.get("additionalProperties"), dict):
        return "map[string]" + type_hint(schema["additionalProperties"])
    name = referenced(schema)
    if name:
        target = definition(name)
        return name.rsplit(".", 1)[1] if target.get("type") in (None, "object") else target["type"]
    return "Object" if schema.get("type", "object") == "object" else schema["type"]


def expected_fields(schema: dict[str, Any], indent: int = 2) -> list[tuple[int, str, str, bool]]:
    required = set(schema.get("required") or ())
    return [(indent, name, type_hint(sub), name in required) for name, sub in sorted(schema["properties"].items())]


def explain(cluster: KubeCluster, *args: str) -> str:
    return cluster.kubectl("explain", *args).stdout


def test_explain_service_prints_the_kind_and_its_fields(cluster: KubeCluster) -> None:
    service = definition("io.k8s.api.core.v1.Service")
    got = parse(explain(cluster, "svc"))
    assert got.header == ["KIND:       Service", "VERSION:    v1", ""]
    assert got.description == words(service["description"])
    assert got.fields == expected_fields(service)
    for name, sub in service["properties"].items():
        assert got.field_descriptions[name] == words(sub["description"]), name


def test_explain_pod_containers_prints_the_field_and_the_container_type(cluster: KubeCluster) -> None:
    containers = definition("io.k8s.api.core.v1.PodSpec")["properties"]["containers"]
    container = definition("io.k8s.api.core.v1.Container")
    got = parse(explain(cluster, "pod.spec.containers"))
    assert got.header == ["KIND:       Pod", "VERSION:    v1", "", "FIELD: containers <[]Container>", "", ""]
    assert got.description == words(containers["description"] + " " + container["description"])
    assert got.fields == expected_fields(container)
    assert ("name", "string", True) in [(name, kind, req) for _, name, kind, req in got.fields]
    assert got.field_descriptions["resources"] == words(container["properties"]["resources"]["description"])


def test_explain_deployment_strategy_recursive_prints_the_field_tree(cluster: KubeCluster) -> None:
    strategy = definition("io.k8s.api.apps.v1.DeploymentSpec")["properties"]["strategy"]
    output = explain(cluster, "deployment.spec.strategy", "--recursive")
    got = parse(output)
    assert got.header == ["GROUP:      apps", "KIND:       Deployment", "VERSION:    v1", "",
                          "FIELD: strategy <DeploymentStrategy>", "", ""]
    assert got.description == words(strategy["description"] + " " +
                                     definition("io.k8s.api.apps.v1.DeploymentStrategy")["description"])
    assert output.split("FIELDS:\n")[1] == ("  rollingUpdate\t<RollingUpdateDeployment>\n"
                                            "    maxSurge\t<IntOrString>\n"
                                            "    maxUnavailable\t<IntOrString>\n"
                                            "  type\t<string>\n\n")


def test_explain_of_an_unknown_field_fails_as_in_kube(cluster: KubeCluster) -> None:
    result = cluster.kubectl("explain", "pod.spec.nosuchfield", expect_failure=True)
    assert 'field "nosuchfield" does not exist' in result.stderr
