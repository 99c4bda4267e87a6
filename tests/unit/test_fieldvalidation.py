"""Field validation: kube's strict decoding of write bodies (unknown, duplicate and mistyped fields).

Cases are tables of (what the body holds, what kube answers); bodies are JSON text, because duplicate keys
only exist before parsing.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from minikube_py.api import fieldvalidation as fv
from minikube_py.api.errors import APIError
from minikube_py.api.fieldvalidation import scalars
from minikube_py.api.fieldvalidation.decoder import (
    DecodeError,
    decode,
    decode_touched,
    loads_marking_duplicates,
)
from minikube_py.api.fieldvalidation.tree import STRING, STRUCT, Node, kind_tree
from minikube_py.api.gofmt import go_v
from minikube_py.api.jsoncopy import copy_json
from minikube_py.api.strategicpatch import apply_strategic_merge_patch
from minikube_py.apiserver.patch import merge_patch

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


# patches: checked where they changed the object --------------------------------------------------------

MERGE, STRATEGIC = "application/merge-patch+json", "application/strategic-merge-patch+json"
TS = "2024-05-01T10:00:00Z"
# A live Deployment as storage holds it: decoded and pruned when it was written, so clean.
LIVE_DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}, "finalizers": ["a", "b"],
                 "annotations": {"deployment.kubernetes.io/revision": "1"}, "creationTimestamp": TS,
                 "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1",
                                    "time": TS, "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
    "spec": {"replicas": 2, "paused": False, "selector": {"matchLabels": {"app": "web"}},
             "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "app", "image": "nginx", "env": [{"name": "A", "value": "1"}],
                                                   "resources": {"limits": {"cpu": "500m"}}},
                                                  {"name": "sidecar", "image": "busybox"}],
                                   "tolerations": [{"key": "k", "operator": "Exists"}]}}},
    "status": {"replicas": 2, "conditions": [{"type": "Available", "status": "True", "lastUpdateTime": TS}]},
}


def applied(content_type: str, live: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """`live` with `patch` applied, as the PATCH handler applies it (on a copy: merge patch shares values)."""
    if content_type == MERGE:
        return merge_patch(copy_json(live), patch)
    return apply_strategic_merge_patch(live, patch, *DEPLOYMENT)


def both_walks(content_type: str, patch: dict[str, Any]) -> tuple[Any, Any]:
    """What the full walk and the partial walk make of `LIVE_DEPLOYMENT` patched: (pruned, strict errors), or
    the DecodeError's message."""
    tree = kind_tree(*DEPLOYMENT)
    assert tree is not None
    outcomes = []
    for walk in (lambda patched: decode(tree, patched), lambda patched: decode_touched(tree, patched, patch)):
        try:
            outcomes.append(walk(applied(content_type, LIVE_DEPLOYMENT, patch)))
        except DecodeError as exc:
            outcomes.append(str(exc))
    return outcomes[0], outcomes[1]


def test_the_live_deployment_is_clean() -> None:
    tree = kind_tree(*DEPLOYMENT)
    assert tree is not None
    assert decode(tree, copy_json(LIVE_DEPLOYMENT)) == (LIVE_DEPLOYMENT, [])


CONTAINERS_PATH = "spec.template.spec.containers"
PATCH_CASES = [
    ("a scalar in a nested struct", MERGE, {"spec": {"replicas": 3}}, []),
    ("a null deletes a field", MERGE, {"spec": {"paused": None, "strategy": {"rollingUpdate": None}}}, []),
    ("a map with a key deleted and one added", STRATEGIC, {"metadata": {"labels": {"app": None, "tier": "web"}}}, []),
    ("unknown fields at several depths, in the object's order", MERGE,
     {"zz": 1, "spec": {"template": {"spec": {"bogus": 1}}, "aa": {"b": 2}}, "metadata": {"x": None, "y": 1}},
     ['unknown field "metadata.y"', 'unknown field "spec.template.spec.bogus"', 'unknown field "spec.aa"',
      'unknown field "zz"']),
    ("a list of structs replaced by a merge patch", MERGE,
     {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "x", "bogus": 1}]}}}},
     [f'unknown field "{CONTAINERS_PATH}[0].bogus"']),
    ("a list of structs merged by key, with its order set", STRATEGIC,
     {"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}],
                                     "containers": [{"name": "app", "weird": True}]}}}},
     [f'unknown field "{CONTAINERS_PATH}[1].weird"']),
    ("only a list's order set", STRATEGIC,
     {"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}]}}}}, []),
    ("values taken out of a list of scalars", STRATEGIC, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
     []),
    ("retained keys", STRATEGIC, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}, []),
    ("a replaced struct", STRATEGIC,
     {"spec": {"template": {"$patch": "replace", "spec": {"containers": [{"name": "c", "image": "i"}], "x": None,
                                                          "y": 1}}}},
     ['unknown field "spec.template.spec.x"', 'unknown field "spec.template.spec.y"']),
    ("a $ key strategic merge patch does not know is a field", STRATEGIC, {"spec": {"$foo": 1}},
     ['unknown field "spec.$foo"']),
    ("directives mean nothing to a merge patch", MERGE, {"spec": {"$patch": "replace"}},
     ['unknown field "spec.$patch"']),
    ("a null list item decodes to the zero value", MERGE, {"spec": {"template": {"spec": {"tolerations": [None]}}}},
     []),
    ("a wrong type in a struct", MERGE, {"spec": {"selector": {"matchLabels": {"app": 1}}}},
     "json: cannot unmarshal number into Go struct field LabelSelector.spec.selector.matchLabels of type string"),
    ("a scalar where a struct goes", MERGE, {"spec": {"template": "none"}},
     "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.template of type v1.PodTemplateSpec"),
    ("a wrong type in a list merged by key", STRATEGIC,
     {"status": {"conditions": [{"type": "Available", "lastUpdateTime": "yesterday"}]}},
     'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'),
    ("the first type error in the object's order", MERGE,
     {"status": {"replicas": "x"}, "spec": {"replicas": "y"}},
     "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"),
]


@pytest.mark.parametrize("case, content_type, patch, expected", PATCH_CASES, ids=[c[0] for c in PATCH_CASES])
def test_a_patch_is_checked_where_it_changed_the_object(case: str, content_type: str, patch: dict[str, Any],
                                                        expected: list[str] | str) -> None:
    full, partial = both_walks(content_type, patch)
    assert partial == full
    assert (full if isinstance(full, str) else full[1]) == expected


# Patch fragments a property test combines: known and unknown fields at several depths, nulls, wrong types,
# lists of structs, maps, and strategic merge directives (which a merge patch takes for unknown fields).
FRAGMENTS = [
    {"spec": {"replicas": st.sampled_from([3, "3", 1.5, None])}},
    {"spec": {"paused": st.sampled_from([None, True, "no"])}},
    {"spec": {"foo": st.sampled_from([1, {"bar": 1}, None])}},
    {"extra": {"deep": 1}},
    {"metadata": {"labels": st.sampled_from([{"tier": "web", "app": None}, {"n": 1}, None])}},
    {"metadata": {"bogus": {"x": 1}, "annotations": {"a": "b"}}},
    {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
    {"spec": {"template": {"spec": {"containers": st.sampled_from([
        [{"name": "app", "image": "x"}], [{"name": "sidecar", "bogus": 1}], [{"name": "app", "ports": "80"}],
        [{"name": "new", "resources": {"limits": {"cpu": "lots"}}}], [None]])}}}},
    {"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}]}}}},
    {"spec": {"template": {"metadata": {"labels": {"v": "2"}, "oops": 1}, "spec": {"nodeSelector": {"x": "y"}}}}},
    {"spec": {"template": {"spec": {"tolerations": st.sampled_from([[None], [{"key": "k", "effect": 3}], None])}}}},
    {"spec": {"template": st.sampled_from(["none", {"$patch": "replace", "spec": {"containers": [], "x": 1}}])}},
    {"spec": {"strategy": {"rollingUpdate": {"maxSurge": st.sampled_from([1, "50%", True, None])}}}},
    {"spec": {"selector": st.sampled_from([None, {"$patch": "delete"}, {"matchLabels": {"app": 1}}])}},
    {"spec": {"$foo": 1}},
    {"status": {"conditions": [{"type": "Available", "status": "False",
                                "lastUpdateTime": st.sampled_from([TS, "bad", None]), "unknown": 1}]}},
]


def as_strategy(template: Any) -> st.SearchStrategy[Any]:
    """A strategy for a fragment whose values may be strategies themselves."""
    if isinstance(template, st.SearchStrategy):
        return template
    if isinstance(template, dict):
        return st.fixed_dictionaries({key: as_strategy(value) for key, value in template.items()})
    return st.just(template)


def overlay(base: Any, top: Any) -> Any:
    """Two fragments as one patch document: objects combine key by key, anything else in `top` wins (nulls
    included: they are part of the patch)."""
    if not (isinstance(base, dict) and isinstance(top, dict)):
        return top
    return {**base, **{key: overlay(base.get(key), value) for key, value in top.items()}}


PATCHES = st.lists(st.one_of([as_strategy(fragment) for fragment in FRAGMENTS]), min_size=1, max_size=5).map(
    lambda fragments: functools.reduce(overlay, fragments, {}))


@settings(max_examples=300, deadline=None)
@given(patch=PATCHES, content_type=st.sampled_from([MERGE, STRATEGIC]))
def test_the_partial_walk_equals_the_full_walk(patch: dict[str, Any], content_type: str) -> None:
    try:
        full, partial = both_walks(content_type, patch)
    except APIError:  # a strategic merge patch that does not apply never gets to the check
        assume(False)
    assert partial == full


def test_an_unknown_field_the_patch_did_not_reach_is_not_reported() -> None:
    """The one difference from checking the whole patched object, and the point of it: the live object was
    checked when it was written, so what the patch left alone is not looked at again."""
    live = copy_json(LIVE_DEPLOYMENT)
    live["spec"]["template"]["spec"]["legacy"] = 1  # cannot be stored through the API: planted here
    patch = {"metadata": {"labels": {"tier": "web"}}}
    obj, warnings = fv.check_patched(DEPLOYMENT, merge_patch(copy_json(live), patch), fv.STRICT, patch=patch,
                                     content_type=MERGE)
    assert warnings == [] and obj["spec"]["template"]["spec"]["legacy"] == 1
    # a JSON patch can put values anywhere, so its result is checked whole
    with pytest.raises(APIError) as caught:
        fv.check_patched(DEPLOYMENT, merge_patch(copy_json(live), patch), fv.STRICT,
                         patch=[{"op": "add", "path": "/metadata/labels/tier", "value": "web"}],
                         content_type="application/json-patch+json")
    assert caught.value.message.endswith('strict decoding error: unknown field "spec.template.spec.legacy"')


@pytest.mark.parametrize("content_type, patch", [
    (MERGE, {"spec": {"template": {"spec": {"containers": [{"name": "app", "imagePolicy": "x"}]}}}, "x": 1}),
    (STRATEGIC, {"spec": {"template": {"spec": {"containers": [{"name": "app", "imagePolicy": "x"}]}}}, "x": 1}),
    (MERGE, {"spec": {"replicas": "x", "paused": True}}),
    (STRATEGIC, {"status": {"conditions": [{"type": "Available", "lastUpdateTime": "yesterday"}]}}),
])
def test_bad_input_in_the_patch_is_the_same_422_as_before(content_type: str, patch: dict[str, Any]) -> None:
    shown = go_v(patch) if content_type == STRATEGIC else None
    refusals = []
    for touched_only in (False, True):
        with pytest.raises(APIError) as caught:
            fv.check_patched(DEPLOYMENT, applied(content_type, LIVE_DEPLOYMENT, patch), fv.STRICT, shown=shown,
                             **({"patch": patch, "content_type": content_type} if touched_only else {}))
        refusals.append((caught.value.code, caught.value.message, caught.value.details))
    assert refusals[0] == refusals[1]
    assert refusals[1][0] == 422 and "patch: Invalid value: " in refusals[1][1]
