"""Label and field selectors parse, match and fail exactly as kube-apiserver 1.32's do."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikube_py.api.errors import APIError
from minikube_py.api.selectors import (
    EVERYTHING,
    NOTHING,
    FieldRequirement,
    FieldSelector,
    LabelSelector,
    escape_field_value,
    validate_label_key,
    validate_label_value,
)

NAME_RULE = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
VALUE_RULE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
              "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
              "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
SUBDOMAIN_RULE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                  "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                  r"validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def case(name: str, *values: object) -> object:
    return pytest.param(*values, id=name)


def bad_request_message(build: object, *args: object) -> str:
    with pytest.raises(APIError) as raised:
        build(*args)  # type: ignore[operator]
    assert (raised.value.code, raised.value.reason) == (400, "BadRequest")
    return raised.value.message


# --- label selectors: matching ------------------------------------------------------------------------------

WEB = {"app": "web", "tier": "front"}


@pytest.mark.parametrize("text, labels, selected", [
    case("an empty selector selects everything", "", WEB, True),
    case("a blank selector selects everything", "  \t ", {}, True),
    case("equality selects the same value", "app=web", WEB, True),
    case("equality rejects another value", "app=db", WEB, False),
    case("equality rejects an object without the label", "env=prod", WEB, False),
    case("double equals is equality", "app==web", WEB, True),
    case("inequality selects another value", "app!=db", WEB, True),
    case("inequality rejects the same value", "app!=web", WEB, False),
    case("inequality selects an object without the label", "env!=prod", WEB, True),
    case("in selects any listed value", "tier in (back,front)", WEB, True),
    case("in rejects an unlisted value", "tier in (back)", WEB, False),
    case("in rejects an object without the label", "env in (prod)", WEB, False),
    case("notin rejects a listed value", "tier notin (front)", WEB, False),
    case("notin selects an unlisted value", "tier notin (back)", WEB, True),
    case("notin selects an object without the label", "env notin (prod)", WEB, True),
    case("a bare key selects any value of it", "tier", WEB, True),
    case("a bare key rejects an object without it", "env", WEB, False),
    case("a negated key rejects an object with it", "!tier", WEB, False),
    case("a negated key selects an object without it", "!env", WEB, True),
    case("a comma means every term must hold", "app=web,tier=back", WEB, False),
    case("all terms holding selects", "app=web,tier=front,!env", WEB, True),
    case("whitespace between tokens is ignored", " app = web ,\ttier in ( back , front ) ", WEB, True),
    case("an empty value selects an empty label", "app=", {"app": ""}, True),
    case("an empty value rejects a missing label", "app=", {}, False),
    case("empty parentheses hold the empty value", "app in ()", {"app": ""}, True),
    case("a trailing comma in a set adds the empty value", "app in (web,)", {"app": ""}, True),
    case("a prefixed key matches", "example.com/app=web", {"example.com/app": "web"}, True),
    case("in and notin are plain words outside operator position", "in=notin", {"in": "notin"}, True),
    case("greater than compares integers", "replicas>3", {"replicas": "10"}, True),
    case("greater than is strict", "replicas>3", {"replicas": "3"}, False),
    case("less than compares integers", "replicas<3", {"replicas": "-1"}, True),
    case("a comparison rejects a value that is not an integer", "replicas>3", {"replicas": "many"}, False),
    case("a comparison rejects an object without the label", "replicas<3", {}, False),
    case("an object with no labels at all is tested as empty", "!app", None, True),
])
def test_label_selector_matching(text: str, labels: dict[str, str] | None, selected: bool) -> None:
    assert LabelSelector.parse(text).matches(labels) is selected


# --- label selectors: invalid input -----------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    case("a leading comma is not a requirement", ",a", "found ',', expected: !, identifier, or 'end of string'"),
    case("a trailing comma needs another requirement", "a=b,", "found '', expected: identifier after ','"),
    case("an operator cannot start a requirement", "=b", "found '=', expected: !, identifier, or 'end of string'"),
    case("two words need an operator between them", "a b",
         "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    case("a negated key takes no value", "!a=b", "found '=', expected: ',' or 'end of string'"),
    case("a negation needs a key", "!", "unable to parse requirement: found '', expected: identifier"),
    case("in needs parentheses", "a in b", "unable to parse requirement: found 'b' expected: '('"),
    case("an unclosed set is rejected", "a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
    case("values in a set need commas", "a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
    case("an opened set needs a value", "a in (",
         "unable to parse requirement: found '', expected: ',', ')' or identifier"),
    case("a doubled trailing comma in a set is rejected as 1.32 does", "a in (b,,)",
         "unable to parse requirement: found ')', expected: ',', or identifier"),
    case("an exact value cannot be a set", "a=(b)", "unable to parse requirement: found '(', expected: identifier"),
    case("an invalid key names the key", "a@b=c",
         f'unable to parse requirement: <nil>: Invalid value: "a@b": name part {NAME_RULE}'),
    case("a key with two slashes is rejected", "a/b/c",
         f'unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name {NAME_RULE} with an '
         "optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"),
    case("an empty key prefix is rejected", "/a",
         'unable to parse requirement: <nil>: Invalid value: "/a": prefix part must be non-empty'),
    case("an uppercase key prefix is rejected", "Example.com/a",
         f'unable to parse requirement: <nil>: Invalid value: "Example.com/a": prefix part {SUBDOMAIN_RULE}'),
    case("a key name over 63 characters is rejected", "k" * 64,
         f'unable to parse requirement: <nil>: Invalid value: "{"k" * 64}": name part must be no more than 63 '
         "characters"),
    case("an invalid value names the key and position", "a=b@",
         f'unable to parse requirement: values[0][a]: Invalid value: "b@": {VALUE_RULE}'),
    case("a value over 63 characters is rejected", "a=" + "v" * 64,
         f'unable to parse requirement: values[0][a]: Invalid value: "{"v" * 64}": must be no more than 63 '
         "characters"),
    case("several invalid values are listed in brackets", "a in (c@,b@)",
         f'unable to parse requirement: [values[0][a]: Invalid value: "b@": {VALUE_RULE}, '
         f'values[1][a]: Invalid value: "c@": {VALUE_RULE}]'),
    case("a comparison needs an integer", "a>b",
         """unable to parse requirement: values[0]: Invalid value: "b": for 'Gt', 'Lt' operators, the value """
         "must be an integer"),
    case("a comparison needs a value", "a<",
         """unable to parse requirement: values[0]: Invalid value: "": for 'Gt', 'Lt' operators, the value """
         "must be an integer"),
])
def test_invalid_label_selectors_are_bad_requests(text: str, message: str) -> None:
    assert bad_request_message(LabelSelector.parse, text) == message


# --- label selectors: rendering and the structured form -------------------------------------------------

@pytest.mark.parametrize("text, rendered", [
    case("requirements render sorted by key", "b=2,a=1", "a=1,b=2"),
    case("set values render sorted", "a in (z,y,x)", "a in (x,y,z)"),
    case("every operator keeps its spelling", "a==1,b!=2,c notin (3),d,!e,f>4,g<5",
         "a==1,b!=2,c notin (3),d,!e,f>4,g<5"),
    case("empty values render as nothing", "a=,b in ()", "a=,b in ()"),
    case("the empty selector renders empty", "", ""),
])
def test_label_selector_to_string(text: str, rendered: str) -> None:
    assert LabelSelector.parse(text).to_string() == rendered
    assert str(LabelSelector.parse(rendered)) == rendered


@pytest.mark.parametrize("selector, rendered", [
    case("match labels become equalities", {"matchLabels": {"app": "web", "tier": "front"}}, "app=web,tier=front"),
    case("expressions become set and existence terms", {"matchExpressions": [
        {"key": "tier", "operator": "NotIn", "values": ["b", "a"]},
        {"key": "env", "operator": "In", "values": ["prod"]},
        {"key": "canary", "operator": "DoesNotExist"},
        {"key": "app", "operator": "Exists"},
    ]}, "app,!canary,env in (prod),tier notin (a,b)"),
    case("labels and expressions combine", {"matchLabels": {"app": "web"},
                                            "matchExpressions": [{"key": "app", "operator": "In",
                                                                  "values": ["web", "api"]}]},
         "app=web,app in (api,web)"),
])
def test_structured_label_selectors(selector: dict[str, object], rendered: str) -> None:
    assert LabelSelector.from_api(selector).to_string() == rendered


def test_a_missing_structured_selector_selects_nothing() -> None:
    assert LabelSelector.from_api(None) == NOTHING
    assert not NOTHING.matches({}) and not NOTHING.empty and NOTHING.to_string() == ""


@pytest.mark.parametrize("selector", [
    case("an empty structured selector selects everything", {}),
    case("empty lists select everything", {"matchLabels": {}, "matchExpressions": []}),
])
def test_empty_structured_selectors_select_everything(selector: dict[str, object]) -> None:
    parsed = LabelSelector.from_api(selector)
    assert parsed == EVERYTHING and parsed.empty and parsed.matches({"any": "thing"})


@pytest.mark.parametrize("selector, message", [
    case("an unknown operator is rejected", {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
         '"Gt" is not a valid label selector operator'),
    case("in needs values", {"matchExpressions": [{"key": "a", "operator": "In"}]},
         "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"),
    case("exists takes no values", {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
         'values: Invalid value: []string{"x"}: values set must be empty for exists and does not exist'),
    case("an invalid match label key is rejected", {"matchLabels": {"a@": "b"}},
         f'key: Invalid value: "a@": name part {NAME_RULE}'),
    case("an invalid match label value is rejected", {"matchLabels": {"a": "b c"}},
         f'values[0][a]: Invalid value: "b c": {VALUE_RULE}'),
])
def test_invalid_structured_selectors_are_bad_requests(selector: dict[str, object], message: str) -> None:
    assert bad_request_message(LabelSelector.from_api, selector) == message


def test_a_selector_from_a_set_requires_every_label() -> None:
    selector = LabelSelector.from_set({"app": "web", "tier": "front"})
    assert selector.to_string() == "app=web,tier=front"
    assert selector.matches({"app": "web", "tier": "front", "extra": "x"})
    assert not selector.matches({"app": "web"})


@pytest.mark.parametrize("text, key, value", [
    case("equality pins the key", "app=web,tier=front", "app", "web"),
    case("double equals pins the key", "app==web", "app", "web"),
    case("a one-value set pins the key", "app in (web)", "app", "web"),
    case("a two-value set does not pin the key", "app in (web,api)", "app", None),
    case("inequality does not pin the key", "app!=web", "app", None),
    case("another key does not pin it", "tier=front", "app", None),
])
def test_label_selector_exact_matches(text: str, key: str, value: str | None) -> None:
    assert LabelSelector.parse(text).requires_exact_match(key) == value


@pytest.mark.parametrize("key, valid", [
    case("a plain name is a valid key", "app", True),
    case("a prefixed name is a valid key", "app.kubernetes.io/name", True),
    case("a name may hold dots dashes and underscores", "a.b-c_d", True),
    case("a name may not end in a dash", "app-", False),
    case("a name may not be empty", "", False),
    case("a prefix over 253 characters is invalid", "a" * 254 + "/b", False),
])
def test_label_key_validation(key: str, valid: bool) -> None:
    assert (validate_label_key(key) == []) is valid


@pytest.mark.parametrize("value, valid", [
    case("an empty value is valid", "", True),
    case("63 characters are allowed", "v" * 63, True),
    case("64 characters are too many", "v" * 64, False),
    case("a slash is not allowed in a value", "a/b", False),
])
def test_label_value_validation(value: str, valid: bool) -> None:
    assert (validate_label_value(value) == []) is valid


# --- label selectors: properties ------------------------------------------------------------------------

KEYS = st.sampled_from(["app", "tier", "example.com/env", "n"])
VALUES = st.sampled_from(["", "web", "db", "1", "front-end", "a.b_c"])
LABEL_SETS = st.dictionaries(KEYS, VALUES, max_size=4)
EXPRESSIONS = st.one_of(
    st.builds(lambda k, op, vs: {"key": k, "operator": op, "values": vs},
              KEYS, st.sampled_from(["In", "NotIn"]), st.lists(VALUES, min_size=1, max_size=3, unique=True)),
    st.builds(lambda k, op: {"key": k, "operator": op}, KEYS, st.sampled_from(["Exists", "DoesNotExist"])),
)
STRUCTURED = st.builds(lambda labels, expressions: {"matchLabels": labels, "matchExpressions": expressions},
                       LABEL_SETS, st.lists(EXPRESSIONS, max_size=3))


@given(STRUCTURED, LABEL_SETS)
def test_a_rendered_selector_parses_back_to_one_that_selects_the_same(selector: dict[str, Any], labels: dict[str, str]) -> None:
    structured = LabelSelector.from_api(selector)
    reparsed = LabelSelector.parse(structured.to_string())
    assert reparsed.matches(labels) == structured.matches(labels)
    assert reparsed.to_string() == structured.to_string()


@given(STRUCTURED, LABEL_SETS)
def test_repeated_values_render_differently_but_select_the_same(selector: dict[str, Any], labels: dict[str, str]) -> None:
    for expression in selector["matchExpressions"]:
        expression["values"] = expression.get("values", []) * 2 or None
    structured = LabelSelector.from_api(selector)
    assert LabelSelector.parse(structured.to_string()).matches(labels) == structured.matches(labels)


@given(st.text(alphabet=st.sampled_from("ab=!(),<> \tin1/."), max_size=20))
def test_any_text_either_parses_or_is_a_bad_request(text: str) -> None:
    try:
        LabelSelector.parse(text)
    except APIError as error:
        assert error.code == 400


# --- field selectors ------------------------------------------------------------------------------------

POD = {"metadata.name": "web-1", "spec.nodeName": "node-1", "status.phase": "Running", "spec.hostNetwork": "false"}


@pytest.mark.parametrize("text, fields, selected", [
    case("an empty field selector selects everything", "", POD, True),
    case("equality selects the same value", "spec.nodeName=node-1", POD, True),
    case("double equals is equality", "spec.nodeName==node-1", POD, True),
    case("equality rejects another value", "spec.nodeName=node-2", POD, False),
    case("inequality selects another value", "status.phase!=Failed", POD, True),
    case("inequality rejects the same value", "status.phase!=Running", POD, False),
    case("a missing field reads as empty", "spec.schedulerName=", POD, True),
    case("a missing field differs from any value", "spec.schedulerName!=x", POD, True),
    case("a comma means every term must hold", "spec.nodeName=node-1,status.phase!=Running", POD, False),
    case("kubectl describe node's pod query selects running pods",
         "spec.nodeName=node-1,status.phase!=Succeeded,status.phase!=Failed", POD, True),
    case("empty terms are skipped", ",metadata.name=web-1,,", POD, True),
    case("an escaped comma is part of the value", r"a=x\,y", {"a": "x,y"}, True),
    case("an escaped equals sign is part of the value", r"a=x\=y", {"a": "x=y"}, True),
    case("an escaped backslash is part of the value", r"a=x\\y", {"a": "x\\y"}, True),
    case("a bang inside a value needs no escape", "a=x!y", {"a": "x!y"}, True),
])
def test_field_selector_matching(text: str, fields: dict[str, str], selected: bool) -> None:
    assert FieldSelector.parse(text).matches(fields) is selected


@pytest.mark.parametrize("text, message", [
    case("a term without an operator is rejected", "abc", "invalid selector: 'abc'; can't understand 'abc'"),
    case("the whole selector is quoted beside the bad term", "a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
    case("an unknown escape is rejected", r"a=b\x", r"invalid field selector: invalid escape sequence: \x"),
    case("a bang cannot be escaped", r"a=b\!", r"invalid field selector: invalid escape sequence: \!"),
    case("a trailing backslash is rejected", "a=b\\", "invalid field selector: invalid escape sequence: \\"),
    case("an unescaped equals sign in a value is rejected by code point", "a=b=c",
         "invalid field selector: unescaped character in value: 61"),
])
def test_invalid_field_selectors_are_bad_requests(text: str, message: str) -> None:
    assert bad_request_message(FieldSelector.parse, text) == message


@pytest.mark.parametrize("text, requirements", [
    case("terms come back sorted by their text", "b=2,a!=1",
         (FieldRequirement("a", "!=", "1"), FieldRequirement("b", "=", "2"))),
    case("double equals is read as equals", "a==1", (FieldRequirement("a", "=", "1"),)),
    case("the first operator splits the term", "a!=b!c", (FieldRequirement("a", "!=", "b!c"),)),
    case("an empty value is kept", "involvedObject.namespace=", (FieldRequirement("involvedObject.namespace", "=", ""),)),
])
def test_field_selector_requirements(text: str, requirements: tuple[FieldRequirement, ...]) -> None:
    assert FieldSelector.parse(text).requirements == requirements


@pytest.mark.parametrize("text, field, value", [
    case("an equality on the name pins the name", "metadata.name=web-1,status.phase!=Failed", "metadata.name", "web-1"),
    case("an inequality pins nothing", "metadata.name!=web-1", "metadata.name", None),
    case("another field pins nothing", "spec.nodeName=n", "metadata.name", None),
])
def test_field_selector_exact_matches(text: str, field: str, value: str | None) -> None:
    assert FieldSelector.parse(text).requires_exact_match(field) == value


def test_field_selector_to_string_escapes_values() -> None:
    selector = FieldSelector.parse(r"b=x\,y,a=\=")
    assert selector.to_string() == r"a=\=,b=x\,y"
    assert escape_field_value("a\\b,c=d!e") == r"a\\b\,c\=d!e"


FIELD_NAMES = st.from_regex(r"[a-z][a-zA-Z.]{0,8}", fullmatch=True)
FIELD_REQUIREMENTS = st.lists(st.builds(FieldRequirement, FIELD_NAMES, st.sampled_from(["=", "!="]), st.text()),
                              max_size=4)


@given(FIELD_REQUIREMENTS)
def test_a_rendered_field_selector_parses_back_to_the_same_terms(requirements: list[FieldRequirement]) -> None:
    rendered = FieldSelector(tuple(requirements)).to_string()
    assert sorted(FieldSelector.parse(rendered).requirements, key=str) == sorted(requirements, key=str)
