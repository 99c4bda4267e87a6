"""Kubernetes protobuf request bodies decode into the JSON objects kube would have produced.

The captured bodies are kubectl 1.32.4's own (shared/notes/kubectl-wire.md, Appendix A). Round trips use a
tiny protobuf encoder that lives in this module only: it writes an object with the committed schema the
way gogo-protobuf does, and decoding must give the object back.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import json
import struct
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minikube_py.api.errors import APIError
from minikube_py.api.kinds import RESOURCES
from minikube_py.api.protobuf import decode_protobuf_body
from minikube_py.api.protobuf.decode import MAGIC, MAX_DEPTH
from minikube_py.api.protobuf.schema import SCALARS, Field, load_schema

SCHEMA = load_schema()
APIEXT = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"


def case(name: str, *values: object) -> object:
    return pytest.param(*values, id=name)


# --- a tiny protobuf encoder (tests only) --------------------------------------------------------------------

def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def key(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def ld(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return key(number, 2) + varint(len(payload)) + payload


def number(number_: int, value: int) -> bytes:
    return key(number_, 0) + varint(value)


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """runtime.Unknown as client-go writes it: typeMeta, raw, and empty contentEncoding/contentType."""
    type_meta = ld(1, api_version.encode()) + ld(2, kind.encode())
    return MAGIC + ld(1, type_meta) + ld(2, raw) + ld(3, b"") + ld(4, b"")


class Encoder:
    """Writes a JSON object as the protobuf message of its kind (every field in number order)."""

    def __init__(self, packed: bool = False) -> None:
        self.packed = packed  # write repeated numbers packed (proto3 style) instead of one by one

    def body(self, obj: dict[str, Any]) -> bytes:
        name = SCHEMA.message_for(obj["apiVersion"], obj["kind"])
        assert name, obj
        return envelope(obj["apiVersion"], obj["kind"], self.message(name, obj))

    def message(self, name: str, value: Any) -> bytes:
        special = SCHEMA.specials.get(name)
        fields = SCHEMA.messages[name]
        if special:
            return SPECIAL_ENCODERS[special](self, fields, value)
        out = b""
        for number_, field in sorted(fields.items()):
            if field.inline:
                out += ld(number_, self.message(field.type, value))
            elif field.json_name in value:
                out += self.field(number_, field, value[field.json_name])
        return out

    def field(self, number_: int, field: Field, value: Any) -> bytes:
        if field.map:
            return b"".join(ld(number_, ld(1, k.encode()) + self.element(2, field, v)) for k, v in value.items())
        if field.repeated and self.packed and field.type in ("bool", "int32", "int64"):
            return ld(number_, b"".join(varint(int(v)) for v in value))
        if field.repeated:
            return b"".join(self.element(number_, field, v) for v in value)
        return self.element(number_, field, value)

    def element(self, number_: int, field: Field, value: Any) -> bytes:
        if field.type == "string":
            return ld(number_, value.encode())
        if field.type == "bytes":
            return ld(number_, base64.b64decode(value))
        if field.type in ("bool", "int32", "int64"):
            return number(number_, int(value))
        if field.type == "double":
            return key(number_, 1) + struct.pack("<d", value)
        return ld(number_, self.message(field.type, value))


def _seconds(text: str, layout: str) -> datetime:
    return datetime.strptime(text, layout).replace(tzinfo=UTC)


def _encode_time(_: Encoder, __: dict[int, Field], value: str) -> bytes:
    return number(1, int(_seconds(value, "%Y-%m-%dT%H:%M:%SZ").timestamp()))


def _encode_micro_time(_: Encoder, __: dict[int, Field], value: str) -> bytes:
    moment = _seconds(value, "%Y-%m-%dT%H:%M:%S.%fZ")
    whole_seconds = int(moment.replace(microsecond=0).timestamp())
    return number(1, whole_seconds) + number(2, moment.microsecond * 1000 + 999)  # kube truncates the nanos


def _encode_int_or_string(_: Encoder, __: dict[int, Field], value: int | str) -> bytes:
    if isinstance(value, int):
        return number(1, 0) + number(2, value) + ld(3, b"")
    return number(1, 1) + number(2, 0) + ld(3, value.encode())


def _encode_one_or_other(single: int, many: int) -> Any:
    """JSONSchemaPropsOr*: a list goes to field `many`, anything else to field `single`."""
    def encode(encoder: Encoder, fields: dict[int, Field], value: Any) -> bytes:
        if isinstance(value, list):
            return encoder.field(many, fields[many], value)
        return encoder.field(single, fields[single], value)
    return encode


SPECIAL_ENCODERS = {
    "time": _encode_time,
    "microtime": _encode_micro_time,
    "quantity": lambda _, __, value: ld(1, value.encode()),
    "intorstring": _encode_int_or_string,
    "rawjson": lambda _, __, value: ld(1, json.dumps(value).encode()),
    "items": lambda _, __, value: b"".join(ld(1, item.encode()) for item in value),
    "schemaorarray": _encode_one_or_other(1, 2),
    "schemaorbool": lambda encoder, fields, value: (
        number(1, value) if isinstance(value, bool) else encoder.field(2, fields[2], value)),
    "schemaorstringarray": _encode_one_or_other(1, 2),
}


def decode(encoded: bytes) -> dict[str, Any]:
    return decode_protobuf_body(encoded)


def round_trip(obj: dict[str, Any], packed: bool = False) -> dict[str, Any]:
    return decode(Encoder(packed).body(obj))


def bad_request(raw: bytes) -> str:
    with pytest.raises(APIError) as raised:
        decode_protobuf_body(raw)
    assert (raised.value.code, raised.value.reason) == (400, "BadRequest")
    return raised.value.message


# --- the bodies kubectl 1.32.4 sends -------------------------------------------------------------------------

CAPTURED = {
    "auth can-i": "azhzAAoyChdhdXRob3JpemF0aW9uLms4cy5pby92MRIXU2VsZlN1YmplY3RBY2Nlc3NSZXZpZXcSPwoQCgASABoAIgAqADIAOABCABIhCh8KB2RlZmF1bHQSBmNyZWF0ZRoAIgAqBHBvZHMyADoAGggIABIAGgAgABoAIgA=",  # noqa: E501
    "create token": "azhzAAooChhhdXRoZW50aWNhdGlvbi5rOHMuaW8vdjESDFRva2VuUmVxdWVzdBIdChAKABIAGgAiACoAMgA4AEIAEgMg2AQaBAoAEgAaACIA",  # noqa: E501
    "auth whoami": "azhzAAotChhhdXRoZW50aWNhdGlvbi5rOHMuaW8vdjESEVNlbGZTdWJqZWN0UmV2aWV3EhoKEAoAEgAaACIAKgAyADgAQgASBgoECgASABoAIgA=",  # noqa: E501
    "create namespace": "azhzAAoPCgJ2MRIJTmFtZXNwYWNlEhwKFAoEZGVtbxIAGgAiACoAMgA4AEIAEgAaAgoAGgAiAA==",
    "create service clusterip": "azhzAAoNCgJ2MRIHU2VydmljZRJ2CikKBndlYnN2YxIAGgRkZW1vIgAqADIAOABCAFoNCgNhcHASBndlYnN2YxJFChsKBzgwLTgwODASA1RDUBhQIgcIABCQPxoAKAASDQoDYXBwEgZ3ZWJzdmMaACIJQ2x1c3RlcklQOgBCAFIAWgBgAGgAGgIKABoAIgA=",  # noqa: E501
    "create configmap": "azhzAAoPCgJ2MRIJQ29uZmlnTWFwEh0KEwoDY2ZnEgAaACIAKgAyADgAQgASBgoBYRIBYhoAIgA=",
    "create deployment": "azhzAAoVCgdhcHBzL3YxEgpEZXBsb3ltZW50ErQBCiMKA3dlYhIAGgRkZW1vIgAqADIAOABCAFoKCgNhcHASA3dlYhJ/CAISDAoKCgNhcHASA3dlYhplChwKABIAGgAiACoAMgA4AEIAWgoKA2FwcBIDd2ViEkUSJwoFbmdpbngSCm5naW54OjEuMjcqAEIAagByAIABAIgBAJABAKIBABoAMgBCAEoAUgBYAGAAaACCAQCKAQCaAQDCAQAiAgoAKAA4ABoMCAAQABgAIAAoADgAGgAiAA==",  # noqa: E501
}

EXPECTED = {
    "auth can-i": {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "metadata": {},
        "spec": {"resourceAttributes": {"namespace": "default", "verb": "create", "resource": "pods"}},
        "status": {"allowed": False},  # Go writes `allowed` (no omitempty) even when false
    },
    "create token": {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": {},
        "spec": {"expirationSeconds": 600},
        "status": {"token": ""},  # `token` has no omitempty; the zero expirationTimestamp is absent
    },
    "auth whoami": {
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {},
        "status": {"userInfo": {}},
    },
    "create namespace": {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}, "spec": {}, "status": {},
    },
    "create service clusterip": {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "websvc", "namespace": "demo", "labels": {"app": "websvc"}},
        "spec": {"ports": [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}],
                 "selector": {"app": "websvc"}, "type": "ClusterIP"},
        "status": {"loadBalancer": {}},
    },
    "create configmap": {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "b"},
    },
    "create deployment": {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "demo", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "resources": {}}]}},
            "strategy": {},
        },
        "status": {},
    },
}


@pytest.mark.parametrize("command", list(CAPTURED))
def test_a_captured_kubectl_body_decodes_to_the_json_kube_would_have_produced(command: str) -> None:
    assert decode(base64.b64decode(CAPTURED[command])) == EXPECTED[command]


def test_the_captured_bodies_are_what_the_test_encoder_writes() -> None:
    """The encoder writes what gogo-protobuf writes, so round trips below exercise the real wire shapes."""
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "b"}}
    raw = ld(1, ld(1, b"cfg") + b"".join(ld(n, b"") for n in (2, 3, 4, 5, 6)) + number(7, 0) + ld(8, b""))
    raw += ld(2, ld(1, b"a") + ld(2, b"b"))
    assert envelope("v1", "ConfigMap", raw) == base64.b64decode(CAPTURED["create configmap"])
    assert decode(Encoder().body(configmap)) == configmap


# --- round trips -------------------------------------------------------------------------------------------------

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web-0", "namespace": "demo", "creationTimestamp": "2024-05-06T07:08:09Z",
                 "deletionGracePeriodSeconds": 0, "finalizers": ["a/b"],
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                      "uid": "u-1", "controller": True}],
                 "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1",
                                    "fieldsV1": {"f:metadata": {"f:labels": {}}}}]},
    "spec": {
        "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}},
                    {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}}],
        "containers": [{
            "name": "app", "image": "busybox", "command": ["sh", "-c"],
            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
            "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}, "requests": {"cpu": "0"}},
            "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
            "livenessProbe": {"tcpSocket": {"port": 8080}},
        }],
        "securityContext": {"supplementalGroups": [1000, 4294967296], "runAsUser": -1},
        "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": -5}],
        "terminationGracePeriodSeconds": 0,
    },
}

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                         "required": ["size"], "additionalProperties": False,
                         "properties": {"size": {"type": "integer", "maximum": 10, "minimum": 0.5,
                                                 "default": 3, "enum": [1, 3, "x"]},
                                        "tags": {"type": "array", "items": {"type": "string"},
                                                 "x-kubernetes-list-type": "set"},
                                        "extra": {"type": "object",
                                                  "additionalProperties": {"type": "string"}}}},
                "status": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}],
                           "items": [{"type": "string"}, {"type": "integer"}]},
            },
            "dependencies": {"a": ["b", "c"], "d": {"type": "object"}},
            "$ref": "#/definitions/x",
            "x-kubernetes-validations": [{"rule": "self.size < 10", "message": "too big"}],
        }}}],
    },
}

ROUND_TRIPS = [
    case("a pod with inline volume sources, probes, quantities and negative numbers", POD),
    case("a deployment keeps an explicit replicas 0 (a pointer)", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
                 "template": {"metadata": {}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
    case("a secret's data values are base64 strings", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "kubernetes.io/tls",
        "data": {"tls.crt": base64.b64encode(b"\x00\xffcert").decode(), "empty": ""}}),
    case("a custom resource definition with every JSONSchemaProps special form", CRD),
    case("an event keeps microseconds and a series", {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
        "eventTime": "2024-01-02T03:04:05.123456Z", "series": {"count": 2,
                                                                "lastObservedTime": "2024-01-02T03:04:06.000001Z"},
        "regarding": {"kind": "Pod", "name": "p"}, "reason": "Started"}),
    case("a subject access review carries extra values as lists", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {},
        "spec": {"user": "alice", "groups": ["dev"], "extra": {"scopes": ["a", "b"], "none": []},
                 "nonResourceAttributes": {"path": "/healthz", "verb": "get"}},
        "status": {"allowed": True, "reason": "RBAC"}}),
    case("a controller revision's data is raw JSON", {
        "apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r"},
        "data": {"spec": {"template": {"$patch": "replace"}}}, "revision": 3}),
    case("a cluster role binding keeps its roleRef's empty apiGroup (no omitempty)", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "b"},
        "subjects": [{"kind": "User", "name": "alice"}],
        "roleRef": {"apiGroup": "", "kind": "ClusterRole", "name": "view"}}),
    case("a pod disruption budget with a percentage and an eviction policy", {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"},
        "spec": {"minAvailable": "50%", "selector": {"matchExpressions": [
            {"key": "app", "operator": "In", "values": ["web"]}]}, "unhealthyPodEvictionPolicy": "AlwaysAllow"},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}}),
    case("a typed client's DeleteOptions under any group-version", {
        "apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
        "preconditions": {"uid": "u-1"}, "propagationPolicy": "Foreground", "dryRun": ["All"]}),
]


@pytest.mark.parametrize("obj", ROUND_TRIPS)
@pytest.mark.parametrize("packed", [False, True], ids=["unpacked", "packed"])
def test_an_encoded_object_decodes_back_to_itself(obj: dict[str, Any], packed: bool) -> None:
    assert round_trip(obj, packed) == obj


@pytest.mark.parametrize("raw, expected", [
    case("a zero non-pointer omitempty scalar is dropped",
         ld(2, number(5, 0) + number(7, 0)), {"spec": {}}),
    case("a zero pointer scalar is kept",
         ld(2, number(1, 0) + number(6, 0)), {"spec": {"replicas": 0, "revisionHistoryLimit": 0}}),
    case("an empty creationTimestamp is absent",
         ld(1, ld(1, b"web") + ld(8, b"")), {"metadata": {"name": "web"}}),
    case("Go's zero time is absent",
         ld(1, ld(8, number(1, -62135596800))), {"metadata": {}}),
    case("a timestamp drops its nanoseconds, as kube does",
         ld(1, ld(8, number(1, 1) + number(2, 999))), {"metadata": {"creationTimestamp": "1970-01-01T00:00:01Z"}}),
    case("a map entry without a value has the zero value",
         ld(1, ld(11, ld(1, b"app"))), {"metadata": {"labels": {"app": ""}}}),
    case("a map entry without a key has the empty key",
         ld(1, ld(11, ld(2, b"web"))), {"metadata": {"labels": {"": "web"}}}),
    case("a later singular field replaces an earlier one",
         ld(1, ld(1, b"a") + ld(1, b"b")), {"metadata": {"name": "b"}}),
    case("unknown field numbers are skipped, whatever their wire type",
         ld(1, ld(1, b"web") + number(99, 7) + key(98, 1) + bytes(8) + key(97, 5) + bytes(4) + ld(96, b"x")),
         {"metadata": {"name": "web"}}),
    case("an int32 keeps the low 32 bits of a wider varint, as Go does",
         ld(2, number(1, (1 << 32) + 3)), {"spec": {"replicas": 3}}),
    case("invalid UTF-8 in a string becomes U+FFFD, as Go's JSON writes it",
         ld(1, ld(1, b"a\xffb")), {"metadata": {"name": "a\ufffdb"}}),
])
def test_go_wire_facts_become_kube_json(raw: bytes, expected: dict[str, Any]) -> None:
    decoded = decode(envelope("apps/v1", "Deployment", raw))
    assert decoded == {"apiVersion": "apps/v1", "kind": "Deployment", **expected}


# --- bad input: always 400 ------------------------------------------------------------------------------------

DEPLOYMENT = "apps/v1", "Deployment"


def nested_schema(depth: int) -> bytes:
    """A CRD whose openAPIV3Schema nests `properties` depth levels deep."""
    props = b""
    for _ in range(depth):
        props = ld(29, ld(1, b"p") + ld(2, props))  # JSONSchemaProps.properties = 29
    version = ld(1, b"v1") + ld(4, ld(1, props))  # CustomResourceDefinitionVersion.schema.openAPIV3Schema
    return envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", ld(2, ld(7, version)))


@pytest.mark.parametrize("raw, message", [
    case("an empty body", b"", "the object provided is unrecognized: empty data"),
    case("a body without the magic (JSON sent as protobuf)", b'{"kind":"Pod"}',
         "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"),
    case("the magic alone", MAGIC, "the object provided is unrecognized: empty body"),
    case("a truncated varint in the envelope", MAGIC + b"\x0a\x80", "unexpected EOF"),
    case("a length past the end of the envelope", MAGIC + b"\x0a\x05ab", "unexpected EOF"),
    case("a varint longer than ten bytes", MAGIC + b"\x08" + b"\xff" * 11, "proto: integer overflow"),
    case("field number zero", MAGIC + b"\x02\x00", "proto: illegal tag 0 (wire type 2)"),
    case("wire type 7", MAGIC + b"\x0f", "proto: illegal wireType 7"),
    case("a group (wire type 3)", MAGIC + b"\x0b", "proto: illegal wireType 3"),
    case("typeMeta written as a varint", MAGIC + number(1, 1), "proto: wrong wireType = 0 for field TypeMeta"),
    case("no kind", envelope("v1", "", b""),
         """Object 'Kind' is missing in 'runtime.TypeMeta{APIVersion:"v1", Kind:""}'"""),
    case("no apiVersion", envelope("", "Pod", b""),
         """Object 'apiVersion' is missing in 'runtime.TypeMeta{APIVersion:"", Kind:"Pod"}'"""),
    case("a kind we do not serve", envelope("v1", "Widget", b""),
         'the object provided is unrecognized: no kind "Widget" is registered for version "v1"'),
    case("a kind in the wrong group", envelope("v1", "Deployment", b""),
         'no kind "Deployment" is registered for version "v1"'),
    case("a string field written as a varint", envelope(*DEPLOYMENT, ld(1, number(1, 5))),
         'Deployment in version "v1" cannot be handled as a Deployment: proto: wrong wireType = 0 for field name'),
    case("a number field written as bytes", envelope(*DEPLOYMENT, ld(2, ld(1, b"2"))),
         "proto: wrong wireType = 2 for field replicas"),
    case("a map entry written as a varint", envelope(*DEPLOYMENT, ld(1, number(11, 1))),
         "proto: wrong wireType = 0 for field labels"),
    case("a message truncated inside a field", envelope(*DEPLOYMENT, ld(1, b"\x0a\x09web")),
         'Deployment in version "v1" cannot be handled as a Deployment: unexpected EOF'),
    case("an IntOrString of an impossible type",
         envelope("policy/v1", "PodDisruptionBudget", ld(2, ld(1, number(1, 2)))), "impossible IntOrString.Type"),
    case("a RawExtension that is not JSON",
         envelope("apps/v1", "ControllerRevision", ld(2, ld(1, b"{nope"))), "raw is not valid JSON"),
    case("a schema maximum that is not a number",
         envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                  ld(2, ld(7, ld(4, ld(1, key(9, 1) + struct.pack("<d", float("nan"))))))),
         "json: unsupported value: nan"),
    case("a timestamp past year 9999", envelope(*DEPLOYMENT, ld(1, ld(8, number(1, 1 << 60)))),
         "Time.MarshalJSON: year outside of range [0,9999]"),
    case("messages nested deeper than the limit", nested_schema(MAX_DEPTH),
         f"messages nested deeper than {MAX_DEPTH} levels"),
])
def test_a_malformed_body_is_a_bad_request(raw: bytes, message: str) -> None:
    assert message in bad_request(raw)


def test_a_deep_but_reasonable_schema_decodes() -> None:
    decoded = decode(nested_schema(20))
    assert decoded["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["p"]["properties"]


# --- fuzzing ----------------------------------------------------------------------------------------------------

ALL_KINDS = sorted((gv, kind) for gv, kinds in SCHEMA.kinds.items() for kind in kinds)


def decodes_or_is_a_bad_request(raw: bytes) -> None:
    try:
        decode_protobuf_body(raw)
    except APIError as exc:
        assert (exc.code, exc.reason) == (400, "BadRequest")


@given(st.binary(max_size=200))
def test_random_bytes_after_the_magic_never_raise_anything_but_a_bad_request(data: bytes) -> None:
    decodes_or_is_a_bad_request(MAGIC + data)


@given(st.sampled_from(ALL_KINDS), st.binary(max_size=300))
def test_random_object_bytes_in_a_valid_envelope_never_raise_anything_but_a_bad_request(
        kind: tuple[str, str], data: bytes) -> None:
    decodes_or_is_a_bad_request(envelope(*kind, data))


@given(st.sampled_from(sorted(CAPTURED)), st.data())
def test_mutated_kubectl_bodies_never_raise_anything_but_a_bad_request(command: str, data: st.DataObject) -> None:
    raw = bytearray(base64.b64decode(CAPTURED[command]))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(len(MAGIC), len(raw) - 1))
        edit = data.draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        if edit == "flip":
            raw[at] ^= data.draw(st.integers(1, 255))
        elif edit == "insert":
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=3))
        elif edit == "delete":
            del raw[at]
        else:
            del raw[at:]
        if len(raw) <= len(MAGIC):
            break
    decodes_or_is_a_bad_request(bytes(raw))


# --- round trips of objects drawn from the schema itself -------------------------------------------------------

GENERATED_DEPTH = 4  # message fields deeper than this are left out, so drawn objects stay small

SCALAR_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "string": st.text(max_size=6),
    "bytes": st.binary(max_size=6).map(lambda b: base64.b64encode(b).decode()),
    "bool": st.booleans(),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "double": st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()),
}
JSON_VALUES = st.recursive(
    st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4)
SECONDS = st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31))


def _special_values(special: str, depth: int) -> st.SearchStrategy[Any]:
    if special == "time":
        return SECONDS.map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"))
    if special == "microtime":
        return SECONDS.map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    if special == "quantity":
        return st.sampled_from(["0", "1", "500m", "1Gi", "2.5"])
    if special == "intorstring":
        return SCALAR_VALUES["int32"] | st.text(max_size=4)
    if special == "rawjson":
        return JSON_VALUES
    if special == "items":
        return st.lists(st.text(max_size=3), max_size=2)
    schema_props = objects(f"{APIEXT}.JSONSchemaProps", depth + 1)
    if special == "schemaorbool":
        return st.booleans() | schema_props
    many = st.lists(st.text(max_size=3), min_size=1, max_size=2) if special == "schemaorstringarray" else \
        st.lists(schema_props, min_size=1, max_size=2)
    return many | schema_props


def _field_values(field: Field, depth: int) -> st.SearchStrategy[Any]:
    element = SCALAR_VALUES[field.type] if field.is_scalar else objects(field.type, depth + 1)
    if field.map:
        return st.dictionaries(st.text(max_size=3), element, min_size=1, max_size=2)
    if field.repeated:
        return st.lists(element, min_size=1, max_size=2)
    if field.pointer or not field.omitempty:
        return element
    return element.filter(lambda v: isinstance(v, dict) or bool(v))  # zeros of omitempty fields vanish


@functools.cache
def objects(name: str, depth: int) -> st.SearchStrategy[Any]:
    """JSON objects of one message, in the form decoding produces (so a round trip is the identity)."""
    fields = SCHEMA.messages[name]
    special = SCHEMA.specials.get(name)
    if special:
        return st.deferred(lambda: _special_values(special, depth))
    shallow = depth >= GENERATED_DEPTH
    optional = {f.json_name: st.deferred(lambda f=f: _field_values(f, depth))
                for f in fields.values() if not f.inline and (f.is_scalar or not shallow)}
    inline = [objects(f.type, depth + 1) for f in fields.values() if f.inline and not shallow]
    return st.tuples(st.fixed_dictionaries({}, optional=optional), *inline).map(
        lambda parts: functools.reduce(lambda a, b: {**a, **b}, parts, {}))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                     HealthCheck.data_too_large])
@given(st.sampled_from(ALL_KINDS).flatmap(
    lambda kind: objects(SCHEMA.kinds[kind[0]][kind[1]], 0).map(
        lambda obj: {**obj, "apiVersion": kind[0], "kind": kind[1]})), st.booleans())
def test_any_object_of_any_served_kind_survives_a_round_trip(obj: dict[str, Any], packed: bool) -> None:
    assert round_trip(obj, packed) == obj


# --- the committed schema ---------------------------------------------------------------------------------------

def test_every_kind_the_apiserver_serves_has_a_message() -> None:
    written = [r for r in RESOURCES if {"create", "update", "patch"} & set(r.verbs)]  # not metrics.k8s.io's
    missing = [(r.api_version, r.kind) for r in written if not SCHEMA.message_for(r.api_version, r.kind)]
    assert not missing, "regenerate schema.json with scripts/gen_protobuf_schema.py"


def test_every_message_the_schema_mentions_is_in_it() -> None:
    referenced = {f.type for fields in SCHEMA.messages.values() for f in fields.values() if f.type not in SCALARS}
    referenced |= {name for kinds in SCHEMA.kinds.values() for name in kinds.values()}
    assert referenced - set(SCHEMA.messages) == set()


# --- the generator's parsers ------------------------------------------------------------------------------------

@functools.cache
def generator() -> Any:
    path = Path(__file__).resolve().parents[2] / "scripts" / "gen_protobuf_schema.py"
    spec = importlib.util.spec_from_file_location("gen_protobuf_schema", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_the_generator_parses_proto2_messages_nested_messages_and_maps() -> None:
    text = """
    // comment
    syntax = "proto2";
    package k8s.io.api.demo.v1;
    import "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto";
    option go_package = "k8s.io/api/demo/v1";
    /* a block
       comment */
    message Outer {
      optional .k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta metadata = 1;
      repeated string names = 2;
      map<string, Inner> inners = 3;
      message Inner {
        optional int32 count = 1;
      }
    }
    """
    gen = generator()
    proto = gen.ProtoParser(text).parse()
    assert proto.package == "k8s.io.api.demo.v1"
    assert proto.imports == ["k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto"]
    outer = proto.messages["k8s.io.api.demo.v1.Outer"]
    assert [(f.number, f.name, f.type, f.label) for f in outer] == [
        (1, "metadata", ".k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", "optional"),
        (2, "names", "string", "repeated"),
        (3, "inners", "Inner", "map"),
    ]
    assert proto.messages["k8s.io.api.demo.v1.Outer.Inner"][0].type == "int32"
    builder = gen.SchemaBuilder(upstream=None)
    builder.messages = proto.messages
    assert builder.resolve("Inner", "k8s.io.api.demo.v1.Outer") == "k8s.io.api.demo.v1.Outer.Inner"
    assert builder.resolve("Outer", "k8s.io.api.demo.v1.Outer") == "k8s.io.api.demo.v1.Outer"


def test_the_generator_reads_json_tags_pointers_and_inline_structs_from_go() -> None:
    text = '''
type Volume struct {
\t// name of the volume.
\tName string `json:"name" protobuf:"bytes,1,opt,name=name"`
\tVolumeSource `json:",inline" protobuf:"bytes,2,opt,name=volumeSource"`
\tReplicas *int32 `json:"replicas,omitempty" protobuf:"varint,3,opt,name=replicas"`
\tmetav1.TypeMeta `json:",inline"`
\tObject Object `json:"-"`
}

type ExtraValue []string
'''
    gen = generator()
    assert gen.parse_go_structs(text) == {"Volume": {
        1: gen.GoField("name", False), 2: gen.GoField(",inline", False), 3: gen.GoField("replicas,omitempty", True),
    }}
    assert gen.parse_go_slice_types(text) == {"ExtraValue"}
