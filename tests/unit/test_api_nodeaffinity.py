"""Node selectors, required node affinity and preferred terms match nodes as kube's nodeaffinity helpers do, and
malformed terms are reported with their paths while the well-formed ones keep working."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.api.nodeaffinity import (
    NodeSelector,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
    preferred_scheduling_terms,
)


def case(name: str, *values: object) -> Any:
    return pytest.param(*values, id=name)


def node(name: str = "n1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": dict(labels)}}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)} if values else {"key": key, "operator": operator}


def selector(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeSelectorTerms": list(terms)}


def pod(node_selector: dict[str, str] | None = None, required: dict[str, Any] | None = None,
        preferred: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    node_affinity: dict[str, Any] = {}
    if required is not None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    if preferred is not None:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    if node_affinity:
        spec["affinity"] = {"nodeAffinity": node_affinity}
    return {"metadata": {"name": "p"}, "spec": spec}


@pytest.mark.parametrize("term, the_node, expected", [
    case("In matches a listed value", {"matchExpressions": [expr("zone", "In", "a", "b")]}, node(zone="b"), True),
    case("In does not match a missing label", {"matchExpressions": [expr("zone", "In", "a")]}, node(), False),
    case("NotIn matches a missing label", {"matchExpressions": [expr("zone", "NotIn", "a")]}, node(), True),
    case("NotIn rejects a listed value", {"matchExpressions": [expr("zone", "NotIn", "a")]}, node(zone="a"), False),
    case("Exists needs the label", {"matchExpressions": [expr("gpu", "Exists")]}, node(gpu=""), True),
    case("DoesNotExist needs its absence", {"matchExpressions": [expr("gpu", "DoesNotExist")]}, node(gpu="1"), False),
    case("Gt compares integers", {"matchExpressions": [expr("cores", "Gt", "8")]}, node(cores="16"), True),
    case("Gt is strict", {"matchExpressions": [expr("cores", "Gt", "8")]}, node(cores="8"), False),
    case("Lt compares integers", {"matchExpressions": [expr("cores", "Lt", "8")]}, node(cores="-1"), True),
    case("Gt fails on a label that is not an integer", {"matchExpressions": [expr("cores", "Gt", "1")]},
         node(cores="many"), False),
    case("expressions in a term are ANDed",
         {"matchExpressions": [expr("zone", "In", "a"), expr("gpu", "Exists")]}, node(zone="a"), False),
    case("metadata.name In matches the node's name",
         {"matchFields": [expr("metadata.name", "In", "n1")]}, node("n1"), True),
    case("metadata.name NotIn rejects the node's name",
         {"matchFields": [expr("metadata.name", "NotIn", "n1")]}, node("n1"), False),
    case("fields and labels are ANDed",
         {"matchFields": [expr("metadata.name", "In", "n1")], "matchExpressions": [expr("zone", "In", "a")]},
         node("n1", zone="b"), False),
    case("an empty term matches nothing", {}, node(), False),
    case("empty lists make an empty term", {"matchExpressions": [], "matchFields": []}, node(), False),
])
def test_a_single_term(term: dict[str, Any], the_node: dict[str, Any], expected: bool) -> None:
    parsed = NodeSelector.from_api(selector(term))
    assert parsed.errors == ()
    assert parsed.matches(the_node) is expected


def test_terms_are_ored() -> None:
    parsed = NodeSelector.from_api(selector({"matchExpressions": [expr("zone", "In", "a")]},
                                            {"matchExpressions": [expr("zone", "In", "b")]}))
    assert [parsed.matches(node(zone=z)) for z in ("a", "b", "c")] == [True, True, False]


def test_no_terms_match_no_node() -> None:
    assert not NodeSelector.from_api(selector()).matches(node())


def test_fields_are_ignored_for_a_node_without_a_name() -> None:
    parsed = NodeSelector.from_api(selector({"matchFields": [expr("metadata.name", "In", "n1")]}))
    assert parsed.matches({"metadata": {"labels": {}}})


OP_SUPPORTED = '"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"'


@pytest.mark.parametrize("term, error", [
    case("an unknown operator", {"matchExpressions": [expr("zone", "Near", "a")]},
         f't[0].matchExpressions[0].operator: Unsupported value: "Near": supported values: {OP_SUPPORTED}'),
    case("an operator that is not a string", {"matchExpressions": [{"key": "zone", "operator": ["In"]}]},
         f't[0].matchExpressions[0].operator: Unsupported value: "[\'In\']": supported values: {OP_SUPPORTED}'),
    case("In without values", {"matchExpressions": [expr("zone", "In")]},
         "t[0].matchExpressions[0].values: Invalid value: []string(nil): for 'in', 'notin' operators, values set "
         "can't be empty"),
    case("Exists with values", {"matchExpressions": [expr("zone", "Exists", "a")]},
         't[0].matchExpressions[0].values: Invalid value: []string{"a"}: values set must be empty for exists and '
         "does not exist"),
    case("Gt with two values", {"matchExpressions": [expr("cores", "Gt", "1", "2")]},
         't[0].matchExpressions[0].values: Invalid value: []string{"1", "2"}: for \'Gt\', \'Lt\' operators, exactly '
         "one value is required"),
    case("Lt with a word", {"matchExpressions": [expr("cores", "Lt", "ten")]},
         't[0].matchExpressions[0].values[0]: Invalid value: "ten": for \'Gt\', \'Lt\' operators, the value must be '
         "an integer"),
    case("an invalid label key", {"matchExpressions": [expr("-zone", "Exists")]},
         't[0].matchExpressions[0].key: Invalid value: "-zone": name part must consist of alphanumeric characters, '
         "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
         "or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    case("a field operator other than In and NotIn", {"matchFields": [expr("metadata.name", "Exists")]},
         't[0].matchFields[0].operator: Unsupported value: "Exists": supported values: "In", "NotIn"'),
    case("a field requirement with two values", {"matchFields": [expr("metadata.name", "In", "a", "b")]},
         't[0].matchFields[0].values: Invalid value: []string{"a", "b"}: must have one element'),
    case("values that are not strings", {"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]},
         "t[0].matchExpressions[0].values: Invalid value: [1]: must be a list of strings"),
    case("a requirement that is not an object", {"matchExpressions": ["zone=a"]},
         "t[0].matchExpressions[0]: Invalid value: 'zone=a': must be an object"),
    case("a term that is not an object", "zone=a", "t[0]: Invalid value: 'zone=a': must be an object"),
])
def test_malformed_terms_are_reported_and_match_nothing(term: Any, error: str) -> None:
    good = {"matchExpressions": [expr("zone", "In", "a")]}
    parsed = NodeSelector.from_api(selector(term, good), "t")
    assert parsed.errors == (error,)
    assert not parsed.matches(node(zone="b", cores="5"))
    assert parsed.matches(node(zone="a")), "the well-formed term keeps matching"


def test_a_selector_that_is_not_an_object_is_reported() -> None:
    parsed = NodeSelector.from_api(["zone"], "required")
    assert parsed.errors == ("required: Invalid value: ['zone']: must be a NodeSelector object",)
    assert not parsed.matches(node())


@pytest.mark.parametrize("the_pod, the_node, expected", [
    case("a pod without constraints fits any node", pod(), node(), True),
    case("nodeSelector needs every label", pod({"zone": "a", "disk": "ssd"}), node(zone="a"), False),
    case("nodeSelector matches when all labels are there", pod({"zone": "a"}), node(zone="a", disk="ssd"), True),
    case("nodeSelector and required affinity are ANDed",
         pod({"zone": "a"}, selector({"matchExpressions": [expr("disk", "In", "ssd")]})), node(zone="a"), False),
    case("required affinity alone decides without nodeSelector",
         pod(required=selector({"matchExpressions": [expr("disk", "In", "ssd")]})), node(disk="ssd"), True),
    case("required affinity with no terms matches no node", pod(required=selector()), node(), False),
])
def test_required_node_affinity(the_pod: dict[str, Any], the_node: dict[str, Any], expected: bool) -> None:
    required = RequiredNodeAffinity.of(the_pod)
    assert required.errors == ()
    assert required.matches(the_node) is expected


def test_required_node_affinity_reports_errors_with_pod_paths() -> None:
    required = RequiredNodeAffinity.of(pod(required=selector({"matchExpressions": [expr("a", "Bad")]})))
    assert required.errors == (
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        f'.matchExpressions[0].operator: Unsupported value: "Bad": supported values: {OP_SUPPORTED}',)
    assert not required.matches(node(a="1"))


def test_a_node_selector_that_is_not_a_map_is_reported_and_matches_nothing() -> None:
    required = RequiredNodeAffinity.of({"spec": {"nodeSelector": ["zone=a"]}})
    assert required.errors == ("spec.nodeSelector: Invalid value: ['zone=a']: must be an object",)
    assert not required.matches(node(zone="a"))


def weighted(weight: Any, *expressions: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "preference": {"matchExpressions": list(expressions)}}


@pytest.mark.parametrize("terms, the_node, score", [
    case("matching terms add their weights",
         [weighted(5, expr("zone", "In", "a")), weighted(3, expr("disk", "Exists"))], node(zone="a", disk="x"), 8),
    case("terms that do not match add nothing",
         [weighted(5, expr("zone", "In", "a")), weighted(3, expr("disk", "Exists"))], node(zone="b"), 0),
    case("a term of weight 0 is ignored", [weighted(0, expr("zone", "In", "a"))], node(zone="a"), 0),
    case("an empty preference is ignored", [{"weight": 7, "preference": {}}], node(), 0),
])
def test_preferred_terms_score(terms: list[dict[str, Any]], the_node: dict[str, Any], score: int) -> None:
    parsed = PreferredSchedulingTerms.from_api(terms)
    assert parsed.errors == ()
    assert parsed.score(the_node) == score


def test_malformed_preferred_terms_are_reported() -> None:
    parsed = preferred_scheduling_terms(pod(preferred=[weighted("heavy", expr("a", "Exists")),
                                                       weighted(2, expr("a", "In"))]))
    assert parsed is not None
    assert parsed.errors == (
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: "
        "'heavy': must be an integer",
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[1].preference"
        ".matchExpressions[0].values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't "
        "be empty")
    assert parsed.score(node(a="1")) == 0


def test_a_pod_without_preferred_terms_has_none() -> None:
    assert preferred_scheduling_terms(pod()) is None
