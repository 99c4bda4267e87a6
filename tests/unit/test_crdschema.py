"""CRD structural schemas: kube's checks of the schema itself, and validation, pruning and defaulting of
custom resources, with apiextensions-apiserver 1.32's field paths and messages."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minikube_py.api.crdschema import CompiledSchema, compile_schema, structural_errors
from minikube_py.api.crdschema.gofmt import go_float, go_json, go_quote, go_sharp_v
from minikube_py.api.crdschema.re2 import PatternError, PatternUnsupported, compile_go

Obj = dict[str, Any]
P = "spec.versions[0].schema.openAPIV3Schema"


def root(**properties: Any) -> Obj:
    return {"type": "object", "properties": properties}


def spec(**properties: Any) -> Obj:
    return root(spec={"type": "object", "properties": properties})


def described(errors: list[Any]) -> list[str]:
    return [e.describe() for e in errors]


# --- structural_errors: the schema of a CRD version ------------------------------------------------------

GOOD_SCHEMA = root(
    metadata={"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}},
    spec={"type": "object", "required": ["size"], "properties": {
        "size": {"type": "integer", "default": 1, "minimum": 0},
        "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "x-kubernetes-preserve-unknown-fields": True},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "required": ["name"],
                            "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
        "mode": {"type": "string", "enum": ["a", "b"], "allOf": [{"pattern": "^[a-z]$"}]},
    }},
    status={"type": "object", "properties": {"ready": {"type": "boolean"}}},
)

STRUCTURAL_CASES = [
    pytest.param(GOOD_SCHEMA, [], id="a structural schema with every kind of node is accepted"),
    pytest.param(root(spec={"properties": {"a": {"type": "string"}}}),
                 [f"{P}.properties[spec].type: Required value: must not be empty for specified object fields"],
                 id="an object field without a type is not structural"),
    pytest.param(spec(list={"type": "array", "items": {"properties": {}}}),
                 [f"{P}.properties[spec].properties[list].items.type: Required value: must not be empty for "
                  "specified array items"],
                 id="array items without a type are not structural"),
    pytest.param({"properties": {"spec": {"type": "object"}}},
                 [f"{P}.type: Required value: must not be empty at the root"],
                 id="a root without a type is not structural"),
    pytest.param({"type": "string"},
                 [f'{P}.type: Invalid value: "string": must be object at the root'],
                 id="a root that is not an object is rejected"),
    pytest.param(spec(list={"type": "array"}),
                 [f"{P}.properties[spec].properties[list].items: Required value: must be specified"],
                 id="an array without items is not structural"),
    pytest.param({"type": "object", "additionalProperties": {"type": "string"}},
                 [f"{P}.additionalProperties: Forbidden: must not be used at the root"],
                 id="additionalProperties at the root is forbidden"),
    pytest.param(spec(m={"type": "object", "properties": {"a": {"type": "string"}},
                         "additionalProperties": {"type": "string"}}),
                 [f"{P}.properties[spec].properties[m].additionalProperties: Forbidden: additionalProperties and "
                  "properties are mutual exclusive"],
                 id="properties and additionalProperties exclude each other"),
    pytest.param(root(metadata={"type": "object", "properties": {"labels": {"type": "object"}}}),
                 [f"{P}.properties[metadata]: Forbidden: must not specify anything other than name and "
                  "generateName, but metadata is implicitly specified"],
                 id="root metadata may restrict only name and generateName"),
    pytest.param(root(metadata={"type": "object", "description": "standard object metadata"}),
                 [f"{P}.properties[metadata]: Forbidden: must not specify anything other than name and "
                  "generateName, but metadata is implicitly specified"],
                 id="even a description on root metadata is forbidden"),
    pytest.param(root(metadata={"type": "string"}),
                 [f'{P}.properties[metadata].type: Invalid value: "string": must be object'],
                 id="root metadata must be an object"),
    pytest.param(root(kind={"type": "integer"}),
                 [f'{P}.properties[kind].type: Invalid value: "integer": must be string'],
                 id="root kind must be a string"),
    pytest.param(spec(a={"type": "string", "anyOf": [{"type": "string", "minLength": 1}]}),
                 [f"{P}.properties[spec].properties[a].anyOf[0].type: Forbidden: must be empty to be structural"],
                 id="a type inside anyOf is not structural"),
    pytest.param(spec(a={"type": "string", "allOf": [{"description": "x"}], "oneOf": [{"default": "y"}]}),
                 [f"{P}.properties[spec].properties[a].allOf[0].description: Forbidden: must be empty to be "
                  "structural",
                  f"{P}.properties[spec].properties[a].oneOf[0].default: Forbidden: must be undefined to be "
                  "structural"],
                 id="descriptions and defaults inside allOf and oneOf are not structural"),
    pytest.param(spec(a={"type": "object", "not": {"nullable": True, "x-kubernetes-list-type": "atomic"}}),
                 [f"{P}.properties[spec].properties[a].not.nullable: Forbidden: must be false to be structural",
                  f"{P}.properties[spec].properties[a].not.x-kubernetes-list-type: Forbidden: must be undefined "
                  "to be structural",
                  f"{P}.properties[spec].properties[a].not.type: Required value: must be array if "
                  "x-kubernetes-list-type is specified"],
                 id="nullable and extensions inside not are not structural"),
    pytest.param({"type": "object", "properties": {}, "anyOf": [{"properties": {"metadata": {}}}]},
                 [f"{P}.anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context",
                  f"{P}.properties[metadata]: Required value: because it is defined in "
                  f"{P}.anyOf[0].properties[metadata]"],
                 id="metadata in a nested context is forbidden and must be specified where it is used"),
    pytest.param({"type": "object", "properties": {"a": {"type": "string"}},
                  "allOf": [{"properties": {"b": {"minLength": 1}}}]},
                 [f"{P}.properties[b]: Required value: because it is defined in {P}.allOf[0].properties[b]"],
                 id="value validations may only name fields the schema specifies"),
    pytest.param(spec(a={"x-kubernetes-int-or-string": True, "x-kubernetes-preserve-unknown-fields": True}),
                 [f"{P}.properties[spec].properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: true: "
                  "must be false if x-kubernetes-int-or-string is true"],
                 id="int-or-string excludes preserve-unknown-fields"),
    pytest.param(spec(t={"x-kubernetes-embedded-resource": True}),
                 [f"{P}.properties[spec].properties[t].properties: Required value: must not be empty if "
                  "x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
                  f"{P}.properties[spec].properties[t].type: Required value: must be object if "
                  "x-kubernetes-embedded-resource is true"],
                 id="an embedded resource must be an object with properties or preserved fields"),
    pytest.param(spec(a={"$ref": "#/definitions/a"}),
                 [f"{P}.properties[spec].properties[a].$ref: Forbidden: $ref is not supported"],
                 id="references are not supported"),
    pytest.param({"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"},
                 [f"{P}: Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported"],
                 id="a schema kube cannot convert reports the conversion error alone"),
    pytest.param(spec(a={"type": "array", "items": [{"type": "string"}]}),
                 [f"{P}.properties[spec].properties[a].items: Forbidden: items must be a schema object and not "
                  "an array"],
                 id="tuple items are not supported"),
    pytest.param(spec(a={"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
                 [f"{P}.properties[spec].properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true "
                  "since the runtime complexity becomes quadratic"],
                 id="uniqueItems is forbidden"),
    pytest.param(spec(a={"type": "strin"}),
                 [f'{P}.properties[spec].properties[a].type: Unsupported value: "strin": supported values: '
                  '"array", "boolean", "integer", "number", "object", "string"'],
                 id="an unknown type is unsupported"),
    pytest.param(spec(a={"type": "null"}),
                 [f'{P}.properties[spec].properties[a].type: Unsupported value: "null": supported values: '
                  '"array", "boolean", "integer", "number", "object", "string"',
                  f"{P}.properties[spec].properties[a].type: Forbidden: type cannot be set to null, use nullable "
                  "as an alternative"],
                 id="type null is rejected in favour of nullable"),
    pytest.param(spec(a={"type": "string", "pattern": "^(?=a)"}),
                 [f'{P}.properties[spec].properties[a].pattern: Invalid value: "^(?=a)": must be a valid regular '
                  "expression, but isn't: error parsing regexp: invalid or unsupported Perl syntax: `(?=`"],
                 id="a pattern Go cannot compile is rejected"),
    pytest.param(root(metadata={"type": "object", "default": {"name": "x"}}),
                 [f"{P}.properties[metadata].default: Forbidden: must not be set in top-level metadata"],
                 id="defaults in top-level metadata are forbidden"),
    pytest.param(spec(replicas={"type": "integer", "default": "one"}),
                 # the default is validated at the path "", hence kube's two spaces before "in body"
                 [f'{P}.properties[spec].properties[replicas].default: Invalid value: "string":  in body must be '
                  'of type integer: "string"'],
                 id="a default must validate against its schema"),
    pytest.param(spec(a={"type": "string", "enum": ["x", "y"], "default": "z"}),
                 [f'{P}.properties[spec].properties[a].default: Unsupported value: "z": supported values: '
                  '"x", "y"'],
                 id="a default must be one of the enum values"),
    pytest.param(root(spec={"type": "object", "default": {"bogus": 1}, "properties": {"a": {"type": "string"}}}),
                 [f'{P}.properties[spec].default: Invalid value: map[string]interface {{}}{{"bogus":1}}: must not '
                  "have unknown fields"],
                 id="a default must not have fields that pruning drops"),
    pytest.param(spec(l={"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}}),
                 [f"{P}.properties[spec].properties[l].x-kubernetes-list-map-keys: Required value: must not be "
                  "empty if x-kubernetes-list-type is map"],
                 id="a map list needs keys"),
    pytest.param(spec(l={"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
                         "items": {"type": "object", "properties": {"name": {"type": "string"}}}}),
                 [f'{P}.properties[spec].properties[l].x-kubernetes-list-map-keys: Invalid value: []string{{"id"}}: '
                  "entries must all be names of item properties"],
                 id="map list keys must be item properties"),
    pytest.param(spec(l={"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                         "items": {"type": "object", "properties": {"name": {"type": "string"}}}}),
                 [f"{P}.properties[spec].properties[l].items.properties[name].default: Required value: this "
                  "property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"],
                 id="map list keys must be required or defaulted"),
    pytest.param(spec(l={"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                         "items": {"type": "string"}}),
                 [f'{P}.properties[spec].properties[l].items.type: Invalid value: "string": must be object if '
                  "parent array's x-kubernetes-list-type is map"],
                 id="map list items must be objects"),
    pytest.param(spec(l={"type": "object", "x-kubernetes-list-type": "set"}),
                 [f'{P}.properties[spec].properties[l].type: Invalid value: "object": must be array if '
                  "x-kubernetes-list-type is specified"],
                 id="a list type on a non-array is rejected"),
    pytest.param(spec(l={"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"}),
                 [f'{P}.properties[spec].properties[l].x-kubernetes-list-type: Unsupported value: "bag": '
                  'supported values: "atomic", "set", "map"'],
                 id="an unknown list type is unsupported"),
    pytest.param(spec(l={"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}),
                 [f'{P}.properties[spec].properties[l].items.x-kubernetes-map-type: Invalid value: "null": must '
                  "be atomic as item of a list with x-kubernetes-list-type=set"],
                 id="objects in a set must be atomic maps"),
    pytest.param(spec(m={"type": "string", "x-kubernetes-map-type": "atomic"}),
                 [f'{P}.properties[spec].properties[m].type: Invalid value: "string": must be object if '
                  "x-kubernetes-map-type is specified"],
                 id="a map type on a non-object is rejected"),
    pytest.param({"type": "object", "nullable": True},
                 [f"{P}.nullable: Forbidden: nullable cannot be true at the root"],
                 id="the root cannot be nullable"),
    pytest.param(spec(a={"type": "string", "x-kubernetes-preserve-unknown-fields": False}),
                 [f"{P}.properties[spec].properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: "
                  "must be true or undefined"],
                 id="preserve-unknown-fields false is rejected"),
    pytest.param(spec(a={"type": "string", "x-kubernetes-validations": [{"rule": " "}]}),
                 [f"{P}.properties[spec].properties[a].x-kubernetes-validations[0].rule: Required value: rule is "
                  "not specified"],
                 id="a validation rule must not be empty"),
    pytest.param({"type": "object", "properties": {"b": {}, "a": {}}},
                 [f"{P}.properties[a].type: Required value: must not be empty for specified object fields",
                  f"{P}.properties[b].type: Required value: must not be empty for specified object fields"],
                 id="structural errors are sorted by their text"),
]


@pytest.mark.parametrize(("schema", "expected"), STRUCTURAL_CASES)
def test_structural_errors(schema: Obj, expected: list[str]) -> None:
    assert described(structural_errors(schema, P)) == expected


def test_with_the_status_subresource_the_root_allows_only_some_keywords() -> None:
    errors = described(structural_errors({"type": "object", "enum": [{}]}, P, status_subresource=True))
    assert errors == [f"{P}: Invalid value: apiextensions.JSONSchemaProps{{...}}: only [Description Type Format "
                      "Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems "
                      "MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example "
                      "XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the "
                      "status subresource is enabled"]
    assert structural_errors(GOOD_SCHEMA, P, status_subresource=True) == []


def test_structural_errors_carry_kube_cause_types() -> None:
    errors = structural_errors(root(spec={}), P)
    assert [(e.type, e.field) for e in errors] == [("FieldValueRequired", f"{P}.properties[spec].type")]


# --- validate: custom resources against their schema ----------------------------------------------------

SCHEMA = {"type": "object", "required": ["spec"], "properties": {
    "spec": {"type": "object", "required": ["color"], "properties": {
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1, "exclusiveMaximum": True},
        "step": {"type": "integer", "multipleOf": 5},
        "color": {"type": "string", "enum": ["red", "blue"]},
        "level": {"type": "integer", "enum": [1, 2]},
        "name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 5},
        "port": {"x-kubernetes-int-or-string": True},
        "note": {"type": "string", "nullable": True},
        "title": {"type": "string"},
        "when": {"type": "string", "format": "date-time"},
        "count": {"type": "integer", "format": "int32"},
        "enabled": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3,
                 "x-kubernetes-list-type": "set"},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "required": ["name"],
                            "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
        "routes": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["host", "path"],
                   "items": {"type": "object", "required": ["host", "path"],
                             "properties": {"host": {"type": "string"}, "path": {"type": "string"}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 2,
                   "minProperties": 1},
        "sealed": {"type": "object", "additionalProperties": False},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "x-kubernetes-preserve-unknown-fields": True},
        "choice": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                   "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
        "code": {"type": "string", "not": {"enum": ["forbidden"]}},
        "size": {"type": "string", "anyOf": [{"pattern": "^[0-9]+$"}, {"enum": ["small", "large"]}]},
    }},
    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
}}


def test_the_validation_schema_is_itself_structural() -> None:
    assert structural_errors(SCHEMA, P) == []
    assert structural_errors(SCHEMA, P, status_subresource=True) == []


def cr(**spec_fields: Any) -> Obj:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"color": "red", **spec_fields}}


VALIDATE_CASES = [
    pytest.param(cr(replicas=3, ratio=0.5, step=10, name="abc", port=80, when="2024-01-02T03:04:05Z",
                    tags=["a", "b"], ports=[{"name": "http", "port": 80}, {"name": "https", "port": 443}],
                    labels={"a": "b"}, extra={"anything": [1, {"x": None}]}, choice={"a": "x"}, code="ok",
                    size="12"),
                 [], id="a valid object has no errors"),
    pytest.param(cr(replicas="string"),
                 ['spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: '
                  '"string"'],
                 id="a string where an integer belongs is a type error"),
    pytest.param(cr(replicas=2.0, ratio=1 / 2), [], id="a whole float is an integer and an integer is a number"),
    pytest.param(cr(replicas=2.5),
                 ['spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: '
                  '"number"'],
                 id="a fraction is not an integer"),
    pytest.param(cr(enabled="yes"),
                 ['spec.enabled: Invalid value: "string": spec.enabled in body must be of type boolean: "string"'],
                 id="a string where a boolean belongs is a type error"),
    pytest.param(cr(labels=["a"]),
                 ['spec.labels: Invalid value: "array": spec.labels in body must be of type object: "array"'],
                 id="an array where an object belongs is a type error"),
    pytest.param({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}},
                 ["spec.color: Required value"], id="a missing required field is reported at its path"),
    pytest.param({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
                 ["spec: Required value"], id="a missing required field at the root is reported"),
    pytest.param(cr(color="pink"),
                 ['spec.color: Unsupported value: "pink": supported values: "red", "blue"'],
                 id="a value outside the enum is unsupported"),
    pytest.param(cr(level=3),
                 ['spec.level: Unsupported value: 3: supported values: "1", "2"'],
                 id="numeric enum values are listed as JSON"),
    pytest.param(cr(color=5),
                 ['spec.color: Invalid value: "integer": spec.color in body must be of type string: "integer"',
                  'spec.color: Unsupported value: 5: supported values: "red", "blue"'],
                 id="a type error does not stop the enum check"),
    pytest.param(cr(name="AB"),
                 ["spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"],
                 id="a string must match its pattern"),
    pytest.param(cr(name="abc\n"),
                 ["spec.name: Invalid value: \"abc\\n\": spec.name in body should match '^[a-z]+$'"],
                 id="a Go dollar does not match before a trailing newline"),
    pytest.param(cr(name="a"),
                 ['spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long'],
                 id="a string shorter than minLength is invalid"),
    pytest.param(cr(name="abcdefg"),
                 ["spec.name: Too long: may not be more than 5 bytes"],
                 id="a string longer than maxLength is too long and other string checks stop"),
    pytest.param(cr(replicas=0),
                 ["spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"],
                 id="a number below its minimum is invalid"),
    pytest.param(cr(replicas=11),
                 ["spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"],
                 id="a number above its maximum is invalid"),
    pytest.param(cr(ratio=0),
                 ["spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"],
                 id="an exclusive minimum excludes the bound"),
    pytest.param(cr(ratio=1.0),
                 ["spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1"],
                 id="an exclusive maximum excludes the bound"),
    pytest.param(cr(step=7),
                 ["spec.step: Invalid value: 7: spec.step in body should be a multiple of 5"],
                 id="a number must be a multiple of multipleOf"),
    pytest.param(cr(replicas="many", name=5),
                 ['spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: '
                  '"string"',
                  'spec.name: Invalid value: "integer": spec.name in body must be of type string: "integer"'],
                 id="a value of the wrong kind is not checked against the other kind's bounds"),
    pytest.param(cr(when="yesterday"),
                 ['spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: '
                  '"yesterday"'],
                 id="a date-time must be RFC 3339"),
    pytest.param(cr(count=3_000_000_000), [], id="int32 and int64 formats are not checked, as in kube"),
    pytest.param(cr(port="80%"), [], id="int-or-string takes a string"),
    pytest.param(cr(port=True),
                 ['spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: '
                  '"boolean"'],
                 id="int-or-string takes nothing but an integer or a string"),
    pytest.param(cr(note=None), [], id="a nullable field takes null"),
    pytest.param(cr(title=None),
                 ['spec.title: Invalid value: "null": spec.title in body must be of type string: "null"'],
                 id="a field that is not nullable does not take null"),
    pytest.param(cr(tags=[]),
                 ["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"],
                 id="an array shorter than minItems is invalid"),
    pytest.param(cr(tags=["a", "b", "c", "d"]),
                 ["spec.tags: Too many: 4: must have at most 3 items"],
                 id="an array longer than maxItems has too many items"),
    pytest.param(cr(tags=["a", 2]),
                 ['spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: '
                  '"integer"'],
                 id="array items are validated at their index"),
    pytest.param(cr(ports=[{"name": "a", "port": "x"}, {"port": 1}]),
                 ['spec.ports[0].port: Invalid value: "string": spec.ports[0].port in body must be of type '
                  'integer: "string"',
                  "spec.ports[1].name: Required value"],
                 id="fields of objects in arrays are validated at their path"),
    pytest.param(cr(labels={"a": "x", "b": 1}),
                 ['spec.labels.b: Invalid value: "integer": spec.labels.b in body must be of type string: '
                  '"integer"'],
                 id="additionalProperties values are validated with a dotted path"),
    pytest.param(cr(labels={"a": "1", "b": "2", "c": "3"}),
                 ["spec.labels: Too many: 3: must have at most 2 items"],
                 id="an object with more than maxProperties has too many items"),
    pytest.param(cr(labels={}),
                 ["spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties"],
                 id="an object with fewer than minProperties is invalid"),
    pytest.param(cr(sealed={"x": 1}),
                 ['spec.sealed: Invalid value: "x": spec.sealed.x in body is a forbidden property'],
                 id="additionalProperties false forbids every field"),
    pytest.param(cr(tags=["a", "b", "a"]),
                 ['spec.tags[2]: Duplicate value: "a"'],
                 id="a set must not hold a value twice"),
    pytest.param(cr(ports=[{"name": "a"}, {"name": "b"}, {"name": "a"}, {"name": "a"}]),
                 ['spec.ports[2]: Duplicate value: map[string]interface {}{"name":"a"}'],
                 id="a map list must not hold a key twice and each duplicate key is reported once"),
    pytest.param(cr(routes=[{"host": "h", "path": "/"}, {"host": "h", "path": "/a"}, {"host": "h", "path": "/"}]),
                 ['spec.routes[2]: Duplicate value: map[string]interface {}{"host":"h", "path":"/"}'],
                 id="a map list with several keys compares all of them"),
    pytest.param(cr(ports=[{"name": "a"}, "b"]),
                 ['spec.ports[1]: Invalid value: "string": spec.ports[1] in body must be of type object: '
                  '"string"',
                  'spec.ports[1]: Invalid value: "b": must be an object for an array of list-type map'],
                 id="a map list holds only objects"),
    pytest.param(cr(extra={"a": {"b": ["c", 1]}}), [], id="preserve-unknown-fields subtrees take anything"),
    pytest.param(cr(template={"spec": {}}),
                 ["spec.template.apiVersion: Required value: must not be empty",
                  "spec.template.kind: Required value: must not be empty"],
                 id="an embedded resource needs apiVersion and kind"),
    pytest.param(cr(template={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a/b"}}),
                 ["spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'"],
                 id="an embedded resource's metadata is validated"),
    pytest.param(cr(template={"apiVersion": "a/b/c", "kind": "Pod_"}),
                 ['spec.template.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c',
                  'spec.template.kind: Invalid value: "Pod_": may have mixed case, but should otherwise match: '
                  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                  "with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
                  "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"],
                 id="an embedded resource's apiVersion and kind are checked"),
    pytest.param(cr(choice={}),
                 ['<nil>: Invalid value: "": "spec.choice" must validate one and only one schema (oneOf). Found '
                  "none valid",
                  "spec.choice.a: Required value"],
                 id="oneOf with no valid alternative reports the best one"),
    pytest.param(cr(choice={"a": "x", "b": "y"}),
                 ['<nil>: Invalid value: "": "spec.choice" must validate one and only one schema (oneOf). Found '
                  "2 valid alternatives"],
                 id="oneOf with two valid alternatives is invalid"),
    pytest.param(cr(code="forbidden"),
                 ['<nil>: Invalid value: "": "spec.code" must not validate the schema (not)'],
                 id="a value matching not is invalid"),
    pytest.param(cr(size="medium"),
                 ['<nil>: Invalid value: "": "spec.size" must validate at least one schema (anyOf)',
                  "spec.size: Invalid value: \"medium\": spec.size in body should match '^[0-9]+$'"],
                 id="anyOf with no valid alternative reports the first best one"),
]


@pytest.mark.parametrize(("obj", "expected"), VALIDATE_CASES)
def test_validate(obj: Obj, expected: list[str]) -> None:
    assert described(compile_schema(SCHEMA).validate(obj)) == expected


def test_validation_errors_carry_kube_cause_types() -> None:
    errors = compile_schema(SCHEMA).validate(cr(replicas="x", color="pink", name="abcdefgh", tags=["a", "a"],
                                                 labels={"a": "1", "b": "2", "c": "3"}))
    assert [(e.type, e.field) for e in errors] == [
        ("FieldValueTypeInvalid", "spec.replicas"), ("FieldValueNotSupported", "spec.color"),
        ("FieldValueTooLong", "spec.name"), ("FieldValueTooMany", "spec.labels"),
        ("FieldValueDuplicate", "spec.tags[1]")]


def test_int_or_string_with_the_anyof_pattern_reports_like_kube() -> None:
    schema = spec(port={"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]})
    errors = compile_schema(schema).validate({"spec": {"port": False}})
    assert described(errors) == [
        'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
        '<nil>: Invalid value: "": "spec.port" must validate at least one schema (anyOf)',
        'spec.port: Invalid value: "boolean": spec.port in body must be of type integer: "boolean"']
    assert compile_schema(schema).validate({"spec": {"port": "http"}}) == []


def test_root_metadata_restrictions_are_validated() -> None:
    schema = root(metadata={"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}})
    errors = compile_schema(schema).validate({"metadata": {"name": "toolong"}})
    assert described(errors) == ["metadata.name: Too long: may not be more than 3 bytes"]


# --- ratcheting: updates may keep invalid values they don't touch -----------------------------------------


RATCHET_CASES = [
    pytest.param(cr(replicas=50, title="a"), cr(replicas=50, title="b"), [],
                 id="an unchanged invalid field does not fail an update"),
    pytest.param(cr(replicas=50), cr(replicas=60),
                 ["spec.replicas: Invalid value: 60: spec.replicas in body should be less than or equal to 10"],
                 id="a changed invalid field fails an update"),
    pytest.param(cr(ports=[{"name": "a", "port": "x"}, {"name": "b"}]),
                 cr(ports=[{"name": "b", "port": 2}, {"name": "a", "port": "x"}]), [],
                 id="map list items correlate by key wherever they moved"),
    pytest.param(cr(tags=["a", 1]), cr(tags=["a", 1, "b"]),
                 ['spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: '
                  '"integer"'],
                 id="items of other lists do not correlate"),
    pytest.param(cr(tags=["a", "a"]), cr(tags=["a", "a", "b"]), [],
                 id="list-type errors are not reported when the old object had them too"),
]


@pytest.mark.parametrize(("old", "new", "expected"), RATCHET_CASES)
def test_ratcheting(old: Obj, new: Obj, expected: list[str]) -> None:
    assert described(compile_schema(SCHEMA).validate(new, old)) == expected


def test_status_updates_validate_only_the_status_with_status_paths() -> None:
    compiled = compile_schema(SCHEMA)
    obj = cr(replicas="bad")
    obj["status"] = {"replicas": "three"}
    assert described(compiled.validate_status(obj, cr())) == [
        'status.replicas: Invalid value: "string": replicas in body must be of type integer: "string"']


# --- prune: unknown fields ---------------------------------------------------------------------------------

PRUNE_SCHEMA = root(
    spec={"type": "object", "properties": {
        "a": {"type": "string"},
        "nested": {"type": "object", "properties": {"keep": {"type": "string"}}},
        "list": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "properties": {"typed": {"type": "object", "properties": {"k": {"type": "string"}}}}},
        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "properties": {"spec": {"type": "object", "properties": {"s": {"type": "string"}}}}},
        "title": {"type": "string"},
        "note": {"type": "string", "nullable": True},
        "anyMap": {"type": "object", "additionalProperties": True},
    }})

PRUNE_CASES = [
    pytest.param({"spec": {"a": "x", "b": "y"}, "top": 1}, {"spec": {"a": "x"}}, ["spec.b", "top"],
                 id="unknown fields are dropped and reported"),
    pytest.param({"spec": {"nested": {"keep": "k", "drop": {"deep": 1}}}}, {"spec": {"nested": {"keep": "k"}}},
                 ["spec.nested.drop"], id="unknown nested fields are dropped"),
    pytest.param({"spec": {"list": [{"x": 1, "y": 2}, {"z": 3}]}}, {"spec": {"list": [{"x": 1}, {}]}},
                 ["spec.list[0].y", "spec.list[1].z"], id="unknown fields of array items are dropped per item"),
    pytest.param({"spec": {"map": {"k1": {"v": "a", "w": "b"}}}}, {"spec": {"map": {"k1": {"v": "a"}}}},
                 ["spec.map.k1.w"], id="additionalProperties values are pruned by their schema"),
    pytest.param({"spec": {"free": {"anything": {"goes": [1, {"x": 2}]}, "typed": {"k": "v", "u": 1}}}},
                 {"spec": {"free": {"anything": {"goes": [1, {"x": 2}]}, "typed": {"k": "v"}}}},
                 ["spec.free.typed.u"],
                 id="preserve-unknown-fields keeps unknown fields but still prunes the fields it specifies"),
    pytest.param({"apiVersion": "v1", "kind": "K", "metadata": {"name": "n", "labels": {"a": "b"}, "bogus": 1}},
                 {"apiVersion": "v1", "kind": "K", "metadata": {"name": "n", "labels": {"a": "b"}}},
                 ["metadata.bogus"], id="apiVersion kind and metadata stay and metadata loses only unknown fields"),
    pytest.param({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "x": 1},
                                        "spec": {"s": "a", "t": "b"}, "other": 1}}},
                 {"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                        "spec": {"s": "a"}}}},
                 ["spec.template.other", "spec.template.spec.t", "spec.template.metadata.x"],
                 id="an embedded resource keeps its type and object metadata"),
    pytest.param({"spec": {"title": None, "note": None}}, {"spec": {"note": None}}, [],
                 id="nulls in fields that are not nullable are dropped"),
    pytest.param({"spec": {"anyMap": {"k": "v", "o": {"inner": 1}}}}, {"spec": {"anyMap": {"k": "v", "o": {}}}},
                 ["spec.anyMap.o.inner"], id="additionalProperties true keeps the keys but not what objects hold"),
]


def test_the_pruning_and_defaulting_schemas_are_structural() -> None:
    assert structural_errors(PRUNE_SCHEMA, P) == []
    assert structural_errors(DEFAULT_SCHEMA, P) == []


@pytest.mark.parametrize(("obj", "expected", "paths"), PRUNE_CASES)
def test_prune(obj: Obj, expected: Obj, paths: list[str]) -> None:
    assert compile_schema(PRUNE_SCHEMA).prune(obj) == paths
    assert obj == expected


def test_prune_keeps_everything_the_schema_specifies() -> None:
    obj = cr(replicas=1, tags=["a"], ports=[{"name": "a", "port": 1}], labels={"x": "y"}, extra={"q": {"r": 1}},
             template={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"any": 1}})
    before = copy.deepcopy(obj)
    assert compile_schema(SCHEMA).prune(obj) == []
    assert obj == before


# --- default: values from the schema -----------------------------------------------------------------------

DEFAULT_SCHEMA = root(spec={"type": "object", "default": {}, "properties": {
    "replicas": {"type": "integer", "default": 1},
    "strategy": {"type": "object", "default": {"type": "Rolling"}, "properties": {
        "type": {"type": "string"}, "maxSurge": {"type": "integer", "default": 25}}},
    "note": {"type": "string", "nullable": True, "default": "n"},
    "title": {"type": "string", "default": "t"},
    "ports": {"type": "array", "items": {"type": "object", "properties": {
        "protocol": {"type": "string", "default": "TCP"},
        "options": {"type": "object", "default": {}, "properties": {"ttl": {"type": "integer", "default": 60}}}}}},
    "weights": {"type": "array", "items": {"type": "integer", "default": 1}},
    "limits": {"type": "object", "additionalProperties": {"type": "object", "default": {"max": 5},
                                                          "properties": {"max": {"type": "integer"},
                                                                         "min": {"type": "integer", "default": 0}}}},
}})

DEFAULT_CASES = [
    pytest.param({}, {"spec": {"replicas": 1, "strategy": {"type": "Rolling", "maxSurge": 25}, "title": "t",
                               "note": "n"}},
                 id="a missing object gets its default and then the defaults of its fields"),
    pytest.param({"spec": {"replicas": 3, "strategy": {"type": "Recreate"}}},
                 {"spec": {"replicas": 3, "strategy": {"type": "Recreate", "maxSurge": 25}, "title": "t",
                           "note": "n"}},
                 id="present values are kept and nested defaults still apply"),
    pytest.param({"spec": {"title": None, "note": None}},
                 {"spec": {"replicas": 1, "strategy": {"type": "Rolling", "maxSurge": 25}, "title": "t",
                           "note": None}},
                 id="null becomes the default unless the field is nullable"),
    pytest.param({"spec": {"ports": [{}, {"protocol": "UDP", "options": {"ttl": 5}}]}},
                 {"spec": {"replicas": 1, "strategy": {"type": "Rolling", "maxSurge": 25}, "title": "t", "note": "n",
                           "ports": [{"protocol": "TCP", "options": {"ttl": 60}},
                                     {"protocol": "UDP", "options": {"ttl": 5}}]}},
                 id="fields of array items are defaulted in every item"),
    pytest.param({"spec": {"weights": [3, None]}},
                 {"spec": {"replicas": 1, "strategy": {"type": "Rolling", "maxSurge": 25}, "title": "t", "note": "n",
                           "weights": [3, 1]}},
                 id="null array items become the items' default"),
    pytest.param({"spec": {"limits": {"cpu": None, "mem": {"max": 9}}}},
                 {"spec": {"replicas": 1, "strategy": {"type": "Rolling", "maxSurge": 25}, "title": "t", "note": "n",
                           "limits": {"cpu": {"max": 5, "min": 0}, "mem": {"max": 9, "min": 0}}}},
                 id="additionalProperties values are defaulted and null ones get the default"),
]


@pytest.mark.parametrize(("obj", "expected"), DEFAULT_CASES)
def test_default(obj: Obj, expected: Obj) -> None:
    compile_schema(DEFAULT_SCHEMA).default(obj)
    assert obj == expected


def test_defaults_are_copies() -> None:
    compiled = compile_schema(DEFAULT_SCHEMA)
    first: Obj = {}
    compiled.default(first)
    first["spec"]["strategy"]["type"] = "changed"
    second: Obj = {}
    compiled.default(second)
    assert second["spec"]["strategy"]["type"] == "Rolling"


def test_default_then_prune_then_validate_as_kube_decodes() -> None:
    schema = spec(replicas={"type": "integer", "default": 1, "minimum": 1}, mode={"type": "string"})
    compiled = compile_schema(schema)
    obj: Obj = {"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x"}, "spec": {"junk": 1, "mode": None}}
    compiled.default(obj)
    assert compiled.prune(obj) == ["spec.junk"]
    assert compiled.validate(obj) == []
    assert obj["spec"] == {"replicas": 1}


# --- compile_schema ----------------------------------------------------------------------------------------


def test_equal_schemas_share_one_compiled_schema() -> None:
    assert compile_schema(copy.deepcopy(SCHEMA)) is compile_schema(copy.deepcopy(SCHEMA))
    assert isinstance(compile_schema(SCHEMA), CompiledSchema)


@pytest.mark.parametrize("schema", [{}, {"type": 5, "properties": [], "items": "x", "required": "a", "enum": 3,
                                         "pattern": 7, "additionalProperties": "no"}],
                         ids=["an empty schema", "a schema of garbage keywords"])
def test_compiling_never_fails(schema: Obj) -> None:
    compiled = compile_schema(schema)
    obj: Obj = {"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n"}, "spec": {"x": 1}}
    compiled.default(obj)
    compiled.prune(obj)
    compiled.validate(obj)
    assert obj["apiVersion"] == "a/v1"
    assert isinstance(structural_errors(schema, P), list)


# --- Go renderings and Go regexps --------------------------------------------------------------------------

GO_CASES = [
    pytest.param(go_float(1e6), "1e+06", id="Go prints a float of a million with an exponent"),
    pytest.param(go_float(123456.0), "123456", id="Go prints a whole float below a million as digits"),
    pytest.param(go_float(0.0001), "0.0001", id="Go prints a small float without an exponent down to 1e-4"),
    pytest.param(go_float(0.00001), "1e-05", id="Go prints a float below 1e-4 with an exponent"),
    pytest.param(go_json(1.0), "1", id="Go marshals a whole float without a fraction"),
    pytest.param(go_json({"b": [1, "<"], "a": None}), '{"a":null,"b":[1,"\\u003c"]}',
                 id="Go marshals maps with sorted keys and HTML-safe strings"),
    pytest.param(go_quote('a"b\n\x01é'), '"a\\"b\\n\\x01é"', id="Go quotes strings keeping printable characters"),
    pytest.param(go_sharp_v({"b": 1.5, "a": [True, None]}), 'map[string]interface {}{"a":[]interface {}{true, '
                                                            'interface {}(nil)}, "b":1.5}',
                 id="Go renders maps and slices of interfaces with their types"),
]


@pytest.mark.parametrize(("got", "expected"), GO_CASES)
def test_go_renderings(got: str, expected: str) -> None:
    assert got == expected


REGEXP_CASES = [
    pytest.param("^[a-z]+$", "abc", True, id="a simple pattern matches"),
    pytest.param("^[a-z]+$", "abc\n", False, id="dollar is the end of the text"),
    pytest.param("(?m)^a$", "b\na\nc", True, id="dollar in multi-line mode is the end of a line"),
    pytest.param("b", "abc", True, id="patterns search rather than match the whole value"),
    pytest.param(r"^\d+$", "١٢", False, id="digit classes are ASCII only"),
    pytest.param("^[[:alpha:]]+$", "abC", True, id="POSIX classes are understood"),
    pytest.param("a(?i)b|c", "C", True, id="flags set inside a group last to the end of the group"),
    pytest.param(r"^\x{41}\101$", "AA", True, id="hex with braces and octal escapes are understood"),
    pytest.param(r"^\Qa.b\E$", "a.b", True, id="quoted literals are literal"),
    pytest.param(r"^\Qa.b\E$", "axb", False, id="quoted dots are not wildcards"),
]


@pytest.mark.parametrize(("pattern", "value", "matches"), REGEXP_CASES)
def test_go_regexps(pattern: str, value: str, matches: bool) -> None:
    assert bool(compile_go(pattern).search(value)) is matches


@pytest.mark.parametrize(("pattern", "message"), [
    pytest.param("(?!a)", "error parsing regexp: invalid or unsupported Perl syntax: `(?!`", id="negative lookahead"),
    pytest.param(r"(a)\1", r"error parsing regexp: invalid escape sequence: `\1`", id="backreferences"),
    pytest.param("a**", "error parsing regexp: invalid nested repetition operator: `**`", id="doubled repetition"),
    pytest.param("a{1001}", "error parsing regexp: invalid repeat count: `{1001}`", id="huge repeat counts"),
    pytest.param("(a", "error parsing regexp: missing closing ): `(a`", id="unclosed groups"),
    pytest.param("[a", "error parsing regexp: missing closing ]: `[a`", id="unclosed classes"),
])
def test_go_rejects_what_re2_cannot_do(pattern: str, message: str) -> None:
    with pytest.raises(PatternError) as raised:
        compile_go(pattern)
    assert str(raised.value) == message


def test_unicode_classes_are_accepted_but_not_checked() -> None:
    with pytest.raises(PatternUnsupported):
        compile_go(r"^\pL+$")
    assert structural_errors(spec(a={"type": "string", "pattern": r"^\pL+$"}), P) == []
    assert compile_schema(spec(a={"type": "string", "pattern": r"^\pL+$"})).validate({"spec": {"a": "1"}}) == []
