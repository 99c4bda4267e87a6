"""Field validation: kube's strict decoding of write bodies (unknown, duplicate and mistyped fields).

Cases are tables of (what the body holds, what kube answers); bodies are JSON text, because duplicate keys
only exist before parsing.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from minikube_py.api import fieldvalidation as fv
from minikube_py.api.errors import APIError
from minikube_py.api.fieldvalidation import scalars
from minikube_py.api.fieldvalidation.decoder import decode, loads_marking_duplicates
from minikube_py.api.fieldvalidation.tree import STRING, STRUCT, Node
from minikube_py.api.gofmt import go_v

DEPLOYMENT = ("apps", "v1", "Deployment")
POD = ("", "v1", "Pod")


def deployment(spec_extra: str = "", container_extra: str = "", template_extra: str = "") -> str:
    container = '{"name": "app", "image": "nginx"' + container_extra + "}"
    return ('{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {'
            '"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},'
            ' "spec": {"containers": [' + container + "]" + template_extra + "}}" + spec_extra + "}}")


def check(body: str, mode: str = fv.STRICT, gvk: tuple[str, str, str] = DEPLOYMENT) -> tuple[Any, list[str]]:
    return fv.check_fields(gvk, fv.decode_json(body.encode(), mode), None, mode)


def error_of(body: str, mode: str = fv.STRICT, gvk: tuple[str, str, str] = DEPLOYMENT) -> APIError:
    with pytest.raises(APIError) as caught:
        check(body, mode, gvk)
    return caught.value


# strict errors ----------------------------------------------------------------------------------------

STRICT_CASES = [
    ("an unknown field in the spec", deployment(', "foo": 1'), ['unknown field "spec.foo"']),
    ("an unknown field in a container, a list item",
     deployment(container_extra=', "imagePolicy": "x"'),
     ['unknown field "spec.template.spec.containers[0].imagePolicy"']),
    ("an unknown field at the top", '{"metadata": {"name": "a"}, "extra": true}', ['unknown field "extra"']),
    ("an unknown field in metadata", '{"metadata": {"name": "a", "label": {}}}', ['unknown field "metadata.label"']),
    ("a field with the wrong case", '{"metadata": {"Name": "a"}}', ['unknown field "metadata.Name"']),
    ("a repeated field", deployment(', "replicas": 1, "replicas": 2'), ['duplicate field "spec.replicas"']),
    ("a repeated map key", '{"metadata": {"labels": {"a": "1", "a": "2"}}}', ['duplicate field "metadata.labels.a"']),
    ("errors in body order", deployment(', "foo": 1, "replicas": 1, "replicas": 2', ', "bar": 2'),
     ['unknown field "spec.template.spec.containers[0].bar"', 'unknown field "spec.foo"',
      'duplicate field "spec.replicas"']),
    ("annotations take any key", '{"metadata": {"annotations": {"x/y": "1", "example.com/anything": ""}}}', []),
    ("a RawExtension takes anything",
     '{"metadata": {"name": "r"}, "revision": 1, "data": {"any": {"thing": [1, "two", null]}}}', []),
    ("managedFields keep free-form fieldsV1",
     '{"metadata": {"managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {"f:x": {}}}}]}}', []),
]


@pytest.mark.parametrize("case, body, expected", STRICT_CASES, ids=[c[0] for c in STRICT_CASES])
def test_warn_reports_strict_errors_and_drops_unknown_fields(case: str, body: str, expected: list[str]) -> None:
    gvk = ("apps", "v1", "ControllerRevision") if "revision" in body else DEPLOYMENT
    obj, warnings = check(body, fv.WARN, gvk)
    assert warnings == expected
    assert "foo" not in obj.get("spec", {}) and "extra" not in obj
    assert "imagePolicy" not in json.dumps(obj)


def test_strict_refuses_unknown_fields_with_kubes_bad_request() -> None:
    err = error_of(deployment(', "foo": 1', ', "bar": 2'))
    assert (err.code, err.reason) == (400, "BadRequest")
    assert err.message == ('Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
                           'unknown field "spec.template.spec.containers[0].bar", unknown field "spec.foo"')


def test_ignore_drops_unknown_fields_silently() -> None:
    obj, warnings = check(deployment(', "foo": 1', ', "bar": 2'), fv.IGNORE)
    assert warnings == []
    assert "foo" not in obj["spec"] and "bar" not in obj["spec"]["template"]["spec"]["containers"][0]


def test_a_repeated_key_keeps_its_last_value() -> None:
    obj, _ = check(deployment(', "replicas": 1, "replicas": 3'), fv.WARN)
    assert obj["spec"]["replicas"] == 3


def test_nulls_decode_to_omitted_fields_and_zero_values() -> None:
    obj, _ = check('{"metadata": {"name": "a", "annotations": null, "labels": {"a": null}}, "spec": null}')
    assert obj == {"metadata": {"name": "a", "labels": {"a": ""}}}


def test_a_kind_without_an_upstream_definition_is_not_checked() -> None:
    body = {"spec": {"anything": 1}}
    assert fv.check_fields(("stable.example.com", "v1", "CronTab"), body, None, fv.STRICT) == (body, [])


def test_a_raw_body_is_parsed_again_to_find_duplicates() -> None:
    raw = b'{"metadata": {"name": "a", "name": "b"}}'
    obj, warnings = fv.check_fields(POD, {"metadata": {"name": "b"}}, raw, fv.WARN)
    assert warnings == ['duplicate field "metadata.name"'] and obj == {"metadata": {"name": "b"}}


def test_preserve_unknown_fields_keeps_unknown_keys() -> None:
    tree = Node(STRUCT, "v1.Open", fields={"known": Node(STRING, "string")}, preserve_unknown_fields=True)
    body = loads_marking_duplicates('{"known": "a", "free": {"x": 1}}')
    assert decode(tree, body) == ({"known": "a", "free": {"x": 1}}, [])


# type errors ------------------------------------------------------------------------------------------

ACCEPTED = [
    ("IntOrString takes a number", deployment(', "strategy": {"rollingUpdate": {"maxSurge": 1}}')),
    ("IntOrString takes a string", deployment(', "strategy": {"rollingUpdate": {"maxSurge": "25%"}}')),
    ("a Quantity takes a string", deployment(container_extra=', "resources": {"limits": {"cpu": "500m"}}')),
    ("a Quantity takes a number", deployment(container_extra=', "resources": {"limits": {"cpu": 0.5}}')),
    ("a timestamp in RFC 3339", '{"metadata": {"creationTimestamp": "2024-02-29T10:00:00Z"}}'),
    ("a float64 takes an integer", '{"spec": {"containers": [{"name": "a", "resources": {}}], "priority": 1}}'),
]


@pytest.mark.parametrize("case, body", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_values_that_fit_their_types(case: str, body: str) -> None:
    gvk = POD if '"priority"' in body else DEPLOYMENT
    check(body, gvk=gvk)


TYPE_ERRORS = [
    ("a string where an int32 goes", deployment(', "replicas": "2"'),
     "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ("a number where a string goes, in a list item", deployment(container_extra=', "env": [{"name": "A", "value": 1}]'),
     "json: cannot unmarshal number into Go struct field EnvVar.spec.template.spec.containers.env.value of type "
     "string"),
    ("a fraction where an int32 goes", deployment(', "replicas": 1.5'),
     "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ("an int32 out of range", deployment(', "replicas": 3000000000'),
     "json: cannot unmarshal number 3000000000 into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ("a string where a list of structs goes", deployment(template_extra=', "volumes": "none"'),
     "json: cannot unmarshal string into Go struct field PodSpec.spec.template.spec.volumes of type []v1.Volume"),
    ("a string as a list item of structs", '{"spec": {"containers": ["nginx"]}}',
     "json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type v1.Container"),
    ("a number as a label value", '{"metadata": {"labels": {"a": 1}}}',
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"),
    ("a list where a struct goes", '{"spec": []}',
     "json: cannot unmarshal array into Go struct field Deployment.spec of type v1.DeploymentSpec"),
    ("a bool in an IntOrString", deployment(', "strategy": {"rollingUpdate": {"maxSurge": true}}'),
     "json: cannot unmarshal bool into Go value of type int32"),
    ("a Quantity that does not parse", deployment(container_extra=', "resources": {"limits": {"cpu": "lots"}}'),
     f"quantities must match the regular expression '{scalars.QUANTITY_PATTERN}'"),
    ("a timestamp with a month 13", '{"metadata": {"creationTimestamp": "2024-13-01T00:00:00Z"}}',
     'parsing time "2024-13-01T00:00:00Z": month out of range'),
]


@pytest.mark.parametrize("case, body, detail", TYPE_ERRORS, ids=[c[0] for c in TYPE_ERRORS])
def test_type_errors_fail_every_directive_with_gos_message(case: str, body: str, detail: str) -> None:
    gvk = POD if '"containers": ["nginx"]' in body else DEPLOYMENT
    for mode in (fv.STRICT, fv.WARN, fv.IGNORE):
        err = error_of(body, mode, gvk)
        assert (err.code, err.reason) == (400, "BadRequest")
        kind = gvk[2]
        assert err.message == f'{kind} in version "v1" cannot be handled as a {kind}: {detail}'


def test_secret_data_must_be_base64() -> None:
    err = error_of('{"data": {"key": "YWJj#"}}', gvk=("", "v1", "Secret"))
    assert err.message.endswith("cannot be handled as a Secret: illegal base64 data at input byte 4")


BASE64 = [("", None), ("YWJj", None), ("YWI=", None), ("YQ==", None), ("YW\nJj", None), ("YWJ", 0),
          ("Y", 0), ("YWJj#", 4), ("Y===", 1), ("YQ=x", 2), ("YQ=", 3), ("YWI=YWJj", 4)]


@pytest.mark.parametrize("text, offset", BASE64)
def test_base64_errors_name_gos_offset(text: str, offset: int | None) -> None:
    expected = None if offset is None else f"illegal base64 data at input byte {offset}"
    assert scalars.base64_error(text) == expected


TIMES = [
    ("2024-02-29T10:00:00Z", None),
    ("2024-02-29T10:00:00.123+02:00", None),
    ("yesterday", 'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'),
    ("2024-02-29", 'parsing time "2024-02-29" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T"'),
    ("2024-02-29T10:00:00Zjunk", 'parsing time "2024-02-29T10:00:00Zjunk": extra text: "junk"'),
    ("2024-02-29T25:00:00Z", 'parsing time "2024-02-29T25:00:00Z": hour out of range'),
]


@pytest.mark.parametrize("text, expected", TIMES)
def test_timestamps_parse_as_rfc3339(text: str, expected: str | None) -> None:
    assert scalars.time_error(text) == expected


# directive, patches, headers ----------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [(None, fv.WARN), ("", fv.WARN), ("Strict", fv.STRICT),
                                             ("Warn", fv.WARN), ("Ignore", fv.IGNORE)])
def test_the_directive_defaults_to_warn(value: str | None, expected: str) -> None:
    assert fv.directive(value, "CreateOptions") == expected


def test_an_unknown_directive_is_an_invalid_options_object() -> None:
    with pytest.raises(APIError) as caught:
        fv.directive("strict", "PatchOptions")
    err = caught.value
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message == ('PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": '
                           'supported values: "", "Ignore", "Strict", "Warn"')
    assert err.details["causes"][0]["field"] == "fieldValidation"


def test_strict_patch_results_are_invalid_on_the_patch_field() -> None:
    with pytest.raises(APIError) as caught:
        fv.check_patched(DEPLOYMENT, {"spec": {"foo": 1}}, fv.STRICT)
    err = caught.value
    assert (err.code, err.reason) == (422, "Invalid")
    detail = 'Invalid value: "{\\"spec\\":{\\"foo\\":1}}": strict decoding error: unknown field "spec.foo"'
    assert err.message == ' "" is invalid: patch: ' + detail
    assert err.details == {"causes": [{"reason": "FieldValueInvalid", "message": detail, "field": "patch"}]}


def test_a_patch_that_breaks_a_type_is_invalid() -> None:
    with pytest.raises(APIError) as caught:
        fv.check_patched(DEPLOYMENT, {"spec": {"replicas": "x"}}, fv.IGNORE, shown="map[spec:map[replicas:x]]")
    assert caught.value.message == (' "" is invalid: patch: Invalid value: "map[spec:map[replicas:x]]": json: '
                                    "cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas "
                                    "of type int32")


def test_warn_patches_warn_about_the_patch_and_the_result() -> None:
    patch_errors = fv.patch_errors("application/merge-patch+json", b'{"spec": {"paused": true, "paused": false}}',
                                   fv.WARN)
    obj, warnings = fv.check_patched(DEPLOYMENT, {"spec": {"paused": False, "foo": 1}}, fv.WARN,
                                     patch_strict_errors=patch_errors)
    assert warnings == ['duplicate field "spec.paused"', 'unknown field "spec.foo"']
    assert obj == {"spec": {"paused": False}}


def test_json_patch_operations_have_known_fields() -> None:
    raw = b'[{"op": "add", "op": "add", "path": "/a", "value": {"x": 1, "x": 2}, "foo": 1}]'
    assert fv.patch_errors("application/json-patch+json", raw, fv.STRICT) == [
        'json patch duplicate field "[0].op"', 'json patch duplicate field "[0].value.x"',
        'json patch unknown field "[0].foo"']
    assert fv.patch_errors("application/json-patch+json", raw, fv.IGNORE) == []


def test_go_v_prints_like_gos_percent_v() -> None:
    assert go_v({"b": [1, "x", None], "a": {"c": True}}) == "map[a:map[c:true] b:[1 x <nil>]]"


def test_warning_headers_quote_the_text() -> None:
    assert fv.warning_header('unknown field "spec.foo"') == '299 - "unknown field \\"spec.foo\\""'
