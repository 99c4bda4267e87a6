"""Strategic merge patch applies exactly as kube-apiserver 1.32 applies it: kubectl's real bodies, every
directive, merge keys and strategies from the upstream schema, and kube's errors for malformed patches."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from minikube_py.api.errors import APIError
from minikube_py.api.strategicpatch import apply_strategic_merge_patch, supports_strategic_merge_patch

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def case(name: str, *values: object) -> object:
    return pytest.param(*values, id=name)


def container(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


def nginx(**fields: Any) -> dict[str, Any]:
    defaults: dict[str, Any] = {"image": "nginx:1.27", "ports": [{"containerPort": 80, "protocol": "TCP"}]}
    return container("nginx", **{**defaults, **fields})


def pod(*containers: dict[str, Any], metadata: dict[str, Any] | None = None, status: dict[str, Any] | None = None,
        **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "web", "namespace": "default", **(metadata or {})},
                           "spec": {"containers": list(containers), **spec}}
    if status is not None:
        obj["status"] = status
    return obj


def deployment(*containers: dict[str, Any], template_metadata: dict[str, Any] | None = None,
               **spec: Any) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "nginx"}, **(template_metadata or {})},
                "spec": {"containers": list(containers)}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "nginx", "namespace": "default", "annotations": {"deployment.kubernetes.io/revision": "1"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "nginx"}}, "template": template, **spec}}


def template_spec(patch: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": patch}}}


def with_template_spec(obj: dict[str, Any], **fields: Any) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["spec"]["template"]["spec"].update(fields)
    return obj


def object_with(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `obj` with the dotted `path` set to `value` (or removed when value is ...)."""
    obj = copy.deepcopy(obj)
    *parents, last = path.split(".")
    target = obj
    for part in parents:
        target = target.setdefault(part, {})
    if value is ...:
        del target[last]
    else:
        target[last] = value
    return obj


def apply(obj: dict[str, Any], patch: Any) -> dict[str, Any]:
    group, _, version = obj["apiVersion"].rpartition("/")
    return apply_strategic_merge_patch(obj, patch, group, version, obj["kind"])


def failure(obj: dict[str, Any], patch: Any) -> tuple[int, str, str]:
    with pytest.raises(APIError) as raised:
        apply(obj, patch)
    return raised.value.code, raised.value.reason, raised.value.message


# --- what kubectl sends ---------------------------------------------------------------------------------------

LIVE = deployment(nginx(), strategy={"type": "RollingUpdate",
                                     "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}})
APPLIED = json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nginx"}}) + "\n"


@pytest.mark.parametrize("original, patch, expected", [
    case("kubectl apply changes replicas and the image and keeps the container's ports",
         LIVE,
         {"metadata": {"annotations": {LAST_APPLIED: APPLIED}},
          "spec": {"replicas": 3, "template": {"spec": {
              "$setElementOrder/containers": [{"name": "nginx"}],
              "containers": [{"image": "nginx:1.28", "name": "nginx"}]}}}},
         object_with(object_with(with_template_spec(LIVE, containers=[nginx(image="nginx:1.28")]),
                                 "spec.replicas", 3),
                     "metadata.annotations", {"deployment.kubernetes.io/revision": "1", LAST_APPLIED: APPLIED})),
    case("kubectl set image changes one container and keeps the others",
         deployment(nginx(), container("sidecar", image="busybox")),
         template_spec({"$setElementOrder/containers": [{"name": "nginx"}, {"name": "sidecar"}],
                        "containers": [{"image": "nginx:1.29", "name": "nginx"}]}),
         deployment(nginx(image="nginx:1.29"), container("sidecar", image="busybox"))),
    case("kubectl rollout restart adds an annotation to the pod template",
         LIVE,
         {"spec": {"template": {"metadata": {"annotations": {
             "kubectl.kubernetes.io/restartedAt": "2026-11-21T22:48:47Z"}}}}},
         object_with(LIVE, "spec.template.metadata.annotations",
                     {"kubectl.kubernetes.io/restartedAt": "2026-11-21T22:48:47Z"})),
    case("kubectl rollout pause sets paused", LIVE, {"spec": {"paused": True}},
         object_with(LIVE, "spec.paused", True)),
    case("kubectl rollout resume deletes paused with null", object_with(LIVE, "spec.paused", True),
         {"spec": {"paused": None}}, LIVE),
    case("kubectl apply switching to Recreate drops rollingUpdate through $retainKeys",
         LIVE, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
         object_with(LIVE, "spec.strategy", {"type": "Recreate"})),
])
def test_kubectl_patches(original: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]) -> None:
    assert apply(original, patch) == expected


# --- merge keys, strategies and directives ----------------------------------------------------------------------

WITH_ENV = pod(nginx(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]))
TWO = pod(container("a", image="a:1", ports=[{"containerPort": 1}]), container("b", image="b:1"))


@pytest.mark.parametrize("original, patch, expected", [
    case("containers merge by name and keep the fields the patch doesn't mention",
         TWO, {"spec": {"containers": [{"name": "a", "image": "a:2"}]}},
         pod(container("a", image="a:2", ports=[{"containerPort": 1}]), container("b", image="b:1"))),
    case("a container with a new name is added after the one the patch mentions before it",
         TWO, {"spec": {"containers": [{"name": "a", "image": "a:2"}, {"name": "c", "image": "c:1"}]}},
         pod(container("a", image="a:2", ports=[{"containerPort": 1}]), container("c", image="c:1"),
             container("b", image="b:1"))),
    case("a container is deleted with $patch: delete",
         TWO, {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}, pod(container("b", image="b:1"))),
    case("$patch: replace in a list replaces the whole list with the other elements",
         TWO, {"spec": {"containers": [{"$patch": "replace"}, {"name": "c", "image": "c:1"}]}},
         pod(container("c", image="c:1"))),
    case("env merges by name: one value changes, one variable is added",
         WITH_ENV, {"spec": {"containers": [{"name": "nginx", "env": [{"name": "B", "value": "3"},
                                                                      {"name": "C", "value": "4"}]}]}},
         pod(nginx(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}]))),
    case("an env variable is deleted by name",
         WITH_ENV, {"spec": {"containers": [{"name": "nginx", "env": [{"name": "A", "$patch": "delete"}]}]}},
         pod(nginx(env=[{"name": "B", "value": "2"}]))),
    case("ports merge by containerPort, and a patch that only adds puts the new port first",
         pod(nginx()), {"spec": {"containers": [{"name": "nginx", "ports": [{"containerPort": 443}]}]}},
         pod(nginx(ports=[{"containerPort": 443}, {"containerPort": 80, "protocol": "TCP"}]))),
    case("volumeMounts merge by mountPath",
         pod(nginx(volumeMounts=[{"name": "data", "mountPath": "/data"}])),
         {"spec": {"containers": [{"name": "nginx", "volumeMounts": [{"mountPath": "/data", "readOnly": True}]}]}},
         pod(nginx(volumeMounts=[{"name": "data", "mountPath": "/data", "readOnly": True}]))),
    case("container args are atomic: the patch list replaces them",
         pod(nginx(args=["-a", "-b"])), {"spec": {"containers": [{"name": "nginx", "args": ["-c"]}]}},
         pod(nginx(args=["-c"]))),
    case("tolerations are atomic",
         pod(nginx(), tolerations=[{"key": "a", "operator": "Exists"}]),
         {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}},
         pod(nginx(), tolerations=[{"key": "b", "operator": "Exists"}])),
    case("$patch: replace on a map replaces it",
         pod(nginx(), nodeSelector={"disk": "ssd", "zone": "a"}),
         {"spec": {"nodeSelector": {"$patch": "replace", "zone": "b"}}}, pod(nginx(), nodeSelector={"zone": "b"})),
    case("$patch: delete on a map empties it",
         pod(nginx(), nodeSelector={"disk": "ssd"}), {"spec": {"nodeSelector": {"$patch": "delete"}}},
         pod(nginx(), nodeSelector={})),
    case("a map without schema information merges like a JSON merge patch",
         pod(nginx(), metadata={"labels": {"app": "web", "tier": "front"}}),
         {"metadata": {"labels": {"tier": None, "env": "prod"}}},
         pod(nginx(), metadata={"labels": {"app": "web", "env": "prod"}})),
    case("null deletes a field", pod(nginx(), nodeName="node-1"), {"spec": {"nodeName": None}}, pod(nginx())),
    case("null for a field the object lacks changes nothing", pod(nginx()), {"spec": {"hostname": None}},
         pod(nginx())),
    case("a new value loses its null fields",
         pod(nginx()), {"spec": {"securityContext": {"runAsUser": 1000, "runAsGroup": None}}},
         pod(nginx(), securityContext={"runAsUser": 1000})),
    case("a value of another JSON type replaces the old one",
         pod(nginx(), nodeSelector={"disk": "ssd"}), {"spec": {"nodeSelector": "none"}},
         pod(nginx(), nodeSelector="none")),
    case("finalizers merge as a set",
         pod(nginx(), metadata={"finalizers": ["a", "b"]}), {"metadata": {"finalizers": ["b", "c"]}},
         pod(nginx(), metadata={"finalizers": ["a", "b", "c"]})),
    case("$deleteFromPrimitiveList removes finalizers",
         pod(nginx(), metadata={"finalizers": ["a", "b", "c"]}),
         {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "c"]}},
         pod(nginx(), metadata={"finalizers": ["b"]})),
    case("$deleteFromPrimitiveList for a list the object lacks changes nothing",
         pod(nginx()), {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}, pod(nginx())),
    case("ownerReferences merge by uid",
         pod(nginx(), metadata={"ownerReferences": [{"uid": "1", "name": "rs-1"}, {"uid": "2", "name": "rs-2"}]}),
         {"metadata": {"ownerReferences": [{"uid": "2", "controller": True}]}},
         pod(nginx(), metadata={"ownerReferences": [{"uid": "1", "name": "rs-1"},
                                                    {"uid": "2", "name": "rs-2", "controller": True}]})),
    case("status conditions merge by type",
         pod(nginx(), status={"conditions": [{"type": "Ready", "status": "False"},
                                             {"type": "PodScheduled", "status": "True"}]}),
         {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
         pod(nginx(), status={"conditions": [{"type": "Ready", "status": "True"},
                                             {"type": "PodScheduled", "status": "True"}]})),
])
def test_merge(original: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]) -> None:
    assert apply(original, patch) == expected


SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
           "spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443}]}}
PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
       "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web", "tier": "front"}}}}


@pytest.mark.parametrize("original, patch, expected", [
    case("Service ports merge by port",
         SERVICE, {"spec": {"ports": [{"port": 443, "targetPort": 9443}]}},
         object_with(SERVICE, "spec.ports", [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 9443}])),
    case("a PodDisruptionBudget's selector has the replace strategy",
         PDB, {"spec": {"selector": {"matchLabels": {"app": "api"}}}},
         object_with(PDB, "spec.selector", {"matchLabels": {"app": "api"}})),
])
def test_merge_keys_and_strategies_of_other_kinds(original: dict[str, Any], patch: dict[str, Any],
                                                  expected: dict[str, Any]) -> None:
    assert apply(original, patch) == expected


# --- $setElementOrder -------------------------------------------------------------------------------------------

def names(obj: dict[str, Any]) -> list[str]:
    return [c["name"] for c in obj["spec"]["containers"]]


THREE = pod(*(container(name) for name in "abc"))


@pytest.mark.parametrize("original, patch, expected_names", [
    case("$setElementOrder puts the merged containers in its order",
         THREE, {"spec": {"$setElementOrder/containers": [{"name": n} for n in "cba"]}}, ["c", "b", "a"]),
    case("an element the patch adds takes its place in $setElementOrder",
         THREE, {"spec": {"$setElementOrder/containers": [{"name": n} for n in "adbc"],
                          "containers": [{"name": "d"}]}}, ["a", "d", "b", "c"]),
    case("an element $setElementOrder doesn't list goes before the listed ones that followed it live",
         THREE, {"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}]}}, ["b", "c", "a"]),
    case("names in $setElementOrder that are in neither list are ignored",
         THREE, {"spec": {"$setElementOrder/containers": [{"name": n} for n in "xcbya"]}}, ["c", "b", "a"]),
    case("without $setElementOrder a new element follows the mentioned one before it",
         THREE, {"spec": {"containers": [{"name": "a"}, {"name": "d"}]}}, ["a", "d", "b", "c"]),
])
def test_set_element_order(original: dict[str, Any], patch: dict[str, Any], expected_names: list[str]) -> None:
    assert names(apply(original, patch)) == expected_names


def test_set_element_order_orders_a_list_of_scalars() -> None:
    original = pod(nginx(), metadata={"finalizers": ["a", "b", "c"]})
    patch = {"metadata": {"$setElementOrder/finalizers": ["c", "a", "b"]}}
    assert apply(original, patch)["metadata"]["finalizers"] == ["c", "a", "b"]


# --- the call itself --------------------------------------------------------------------------------------------

def test_an_empty_patch_changes_nothing() -> None:
    assert apply(LIVE, {}) == LIVE


def test_a_null_patch_is_an_empty_patch() -> None:
    assert apply(LIVE, None) == LIVE


def test_neither_argument_is_changed() -> None:
    original, patch = copy.deepcopy(WITH_ENV), {"spec": {"containers": [{"name": "nginx", "env": [
        {"name": "A", "$patch": "delete"}, {"name": "C", "value": "3"}]}]}}
    original_before, patch_before = copy.deepcopy(original), copy.deepcopy(patch)
    apply(original, patch)
    assert (original, patch) == (original_before, patch_before)


def test_only_kinds_with_an_upstream_schema_support_it() -> None:
    assert supports_strategic_merge_patch("apps", "v1", "Deployment")
    assert supports_strategic_merge_patch("", "v1", "Pod")
    assert not supports_strategic_merge_patch("example.com", "v1", "Widget")


# --- errors, as kube answers them -------------------------------------------------------------------------------

SAR = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
       "spec": {"user": "jane", "extra": {"scopes": ["a"]}}}
REVISION = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r1"}, "revision": 1,
            "data": {"spec": {"template": {}}}}
UNKNOWN = 500, ""


@pytest.mark.parametrize("original, patch, expected", [
    case("a patch that is not a JSON object is a bad request", LIVE, ["spec"],
         (400, "BadRequest", "json: cannot unmarshal array into Go value of type map[string]interface {}")),
    case("a kind without schema doesn't support strategic merge patch",
         {"apiVersion": "example.com/v1", "kind": "Widget"}, {},
         (400, "BadRequest", "strategic merge patch format is not supported")),
    case("a merging list element without its merge key",
         TWO, {"spec": {"containers": [{"image": "x"}]}},
         (*UNKNOWN, "map: map[image:x] does not contain declared merge key: name")),
    case("a delete directive without the merge key",
         TWO, {"spec": {"containers": [{"$patch": "delete"}]}},
         (*UNKNOWN, "map: map[$patch:delete] does not contain declared merge key: name")),
    case("$patch: merge on a map is an unknown patch type",
         LIVE, {"spec": {"$patch": "merge"}}, (*UNKNOWN, "unknown patch type: merge in map: map[$patch:merge]")),
    case("$patch: merge in a list is not supported",
         TWO, {"spec": {"containers": [{"$patch": "merge"}]}},
         (*UNKNOWN, "merging lists cannot yet be specified in the patch")),
    case("an unknown $patch value in a list element",
         TWO, {"spec": {"containers": [{"name": "a", "$patch": "bogus"}]}},
         (*UNKNOWN, "unknown patch type: bogus in map: map[$patch:bogus name:a]")),
    case("a $patch value that is not a string",
         LIVE, {"spec": {"$patch": 1}}, (*UNKNOWN, "unknown patch type: %!s(int64=1) in map: map[$patch:1]")),
    case("$retainKeys that is not a list",
         LIVE, {"spec": {"strategy": {"$retainKeys": "type"}}}, (400, "BadRequest", "invalid patch format of retainKeys")),
    case("$retainKeys that doesn't list a key the patch sets",
         LIVE, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": {}}}},
         (400, "BadRequest", "invalid patch format of retainKeys")),
    case("a $setElementOrder key without a slash",
         LIVE, {"spec": {"$setElementOrder-containers": []}},
         (400, "BadRequest", "invalid patch format of setElementOrder list")),
    case("a $deleteFromPrimitiveList key without a slash",
         LIVE, {"metadata": {"$deleteFromPrimitiveList": ["a"]}},
         (400, "BadRequest", "invalid patch format of primitive list")),
    case("$setElementOrder that is not a list",
         TWO, {"spec": {"$setElementOrder/containers": "a"}},
         (*UNKNOWN, "expected a []interface {}, but received a string")),
    case("$setElementOrder for a field that holds a number",
         LIVE, {"spec": {"$setElementOrder/replicas": [1]}},
         (*UNKNOWN, "expected a []interface {}, but received a int64")),
    case("$setElementOrder for a field that is not a list",
         LIVE, {"spec": {"$setElementOrder/paused": [True]}}, (*UNKNOWN, "expected slice or array type, but got: struct")),
    case("$setElementOrder for a field the kind doesn't have",
         LIVE, {"spec": {"$setElementOrder/sidecars": []}},
         (*UNKNOWN, 'unable to find api field in struct DeploymentSpec for the json field "sidecars"')),
    case("a patch list in another order than $setElementOrder",
         TWO, {"spec": {"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                        "containers": [{"name": "b"}, {"name": "a"}]}},
         (*UNKNOWN, "The order in patch list:\n[map[name:b] map[name:a]]\n doesn't match $setElementOrder list:\n"
                    "[map[name:a] map[name:b]]\n")),
    case("a list of lists is invalid",
         pod(nginx(), metadata={"finalizers": []}), {"metadata": {"finalizers": [["a"]]}},
         (422, "Invalid", "the server rejected our request due to an error in our request")),
    case("a merging list mixing element types",
         pod(nginx(), metadata={"finalizers": ["a"]}), {"metadata": {"finalizers": [1]}},
         (*UNKNOWN, "list element types are not identical: [[a] [1]]")),
    case("nested maps inside a RawExtension can't be merged",
         REVISION, {"data": {"spec": {"replicas": 1}}},
         (*UNKNOWN, 'unable to find api field in struct RawExtension for the json field "spec"')),
    case("lists inside a map field can't be merged",
         SAR, {"spec": {"extra": {"scopes": ["b"]}}},
         (*UNKNOWN, "merging an object in json but data type is not struct, instead is: map")),
    case("$setElementOrder of an atomic list of objects compares maps, which panics in Go",
         pod(nginx(), tolerations=[{"key": "a"}]),
         {"spec": {"$setElementOrder/tolerations": [{"key": "a"}], "tolerations": [{"key": "a"}]}},
         (500, "InternalError",
          "Internal error occurred: runtime error: hash of unhashable type map[string]interface {}")),
])
def test_errors(original: dict[str, Any], patch: Any, expected: tuple[int, str, str]) -> None:
    assert failure(original, patch) == expected
