"""Server-side apply and managedFields, over HTTPS against the real apiserver and etcd."""

from __future__ import annotations

import time

import httpx
import orjson

APPLY = {"Content-Type": "application/apply-patch+yaml"}
MERGE = {"Content-Type": "application/merge-patch+json"}


def deployments(ns: str, name: str = "") -> str:
    return f"/apis/apps/v1/namespaces/{ns}/deployments" + (f"/{name}" if name else "")


def configmaps(ns: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/configmaps" + (f"/{name}" if name else "")


def deployment(name: str, *, replicas: int | None = 2, image: str = "nginx:1", labels: dict | None = None) -> dict:
    spec: dict = {"selector": {"matchLabels": {"app": name}},
                  "template": {"metadata": {"labels": {"app": name}},
                               "spec": {"containers": [{"name": "web", "image": image}]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    meta: dict = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}


def apply(api: httpx.Client, url: str, body: dict | str, manager: str = "alice", force: bool | None = None,
          **params: str) -> httpx.Response:
    query = {"fieldManager": manager, **params} if manager else dict(params)
    if force is not None:
        query["force"] = "true" if force else "false"
    content = body if isinstance(body, str) else orjson.dumps(body)
    return api.patch(url, content=content, headers=APPLY, params=query)


def entries(obj: dict) -> dict[tuple[str, str], dict]:
    return {(e["manager"], e["operation"]): e for e in obj["metadata"].get("managedFields", [])}


def owned(obj: dict, manager: str, operation: str = "Apply") -> dict:
    return entries(obj)[(manager, operation)]["fieldsV1"]


# apply creates, merges and owns ---------------------------------------------------------------------------


def test_apply_creates_a_missing_object_and_owns_exactly_its_fields(api: httpx.Client, namespace: str) -> None:
    r = apply(api, deployments(namespace, "web"), deployment("web"))
    assert r.status_code == 201, r.text
    obj = r.json()
    assert obj["spec"]["replicas"] == 2
    assert obj["spec"]["strategy"]["type"] == "RollingUpdate"  # defaulted, but owned by nobody
    (entry,) = obj["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"], entry["apiVersion"]) == ("alice", "Apply", "apps/v1")
    assert entry["fieldsType"] == "FieldsV1" and entry["time"].endswith("Z")
    assert entry["fieldsV1"] == {
        "f:spec": {
            "f:replicas": {}, "f:selector": {},
            "f:template": {"f:metadata": {"f:labels": {"f:app": {}}},
                           "f:spec": {"f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}}}}},
        }}
    assert api.get(deployments(namespace, "web")).json()["metadata"]["managedFields"] == [entry]


def test_a_yaml_body_works_like_json(api: httpx.Client, namespace: str) -> None:
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  a: '1'\n"
    r = apply(api, configmaps(namespace, "y"), body)
    assert r.status_code == 201, r.text
    assert r.json()["data"] == {"a": "1"}


def test_reapplying_the_same_configuration_changes_nothing(api: httpx.Client, namespace: str) -> None:
    first = apply(api, deployments(namespace, "same"), deployment("same")).json()
    again = apply(api, deployments(namespace, "same"), deployment("same"))
    assert again.status_code == 200
    assert again.json()["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert again.json()["metadata"]["managedFields"] == first["metadata"]["managedFields"]


def test_a_field_left_out_of_the_next_apply_is_removed(api: httpx.Client, namespace: str) -> None:
    url = configmaps(namespace, "cm")
    apply(api, url, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1", "b": "2"}})
    r = apply(api, url, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1"}})
    assert r.json()["data"] == {"a": "1"}
    assert owned(r.json(), "alice") == {"f:data": {"f:a": {}}}


def test_a_removed_field_owned_by_another_manager_stays(api: httpx.Client, namespace: str) -> None:
    url = configmaps(namespace, "shared")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}, "data": {"a": "1", "b": "2"}}
    apply(api, url, cm)
    apply(api, url, {**cm, "data": {"b": "2"}}, manager="bob")  # bob shares b: same value, no conflict
    r = apply(api, url, {**cm, "data": {"a": "1"}})
    assert r.json()["data"] == {"a": "1", "b": "2"}
    assert owned(r.json(), "bob") == {"f:data": {"f:b": {}}}


def test_a_list_map_merges_items_by_key_and_keeps_other_managers_items(api: httpx.Client, namespace: str) -> None:
    url = deployments(namespace, "multi")
    apply(api, url, deployment("multi"))
    sidecar = deployment("multi", replicas=None)
    sidecar["spec"]["template"]["spec"]["containers"] = [{"name": "log", "image": "busybox"}]
    del sidecar["spec"]["selector"]
    r = apply(api, url, sidecar, manager="bob")
    assert r.status_code == 200, r.text
    containers = r.json()["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("web", "nginx:1"), ("log", "busybox")]
    assert containers[0]["imagePullPolicy"] == "IfNotPresent"  # defaults of the kept item survive


# conflicts and force --------------------------------------------------------------------------------------


def test_changing_a_field_another_applier_owns_is_a_conflict(api: httpx.Client, namespace: str) -> None:
    url = deployments(namespace, "c")
    apply(api, url, deployment("c", replicas=2))
    r = apply(api, url, deployment("c", replicas=5), manager="bob")
    assert r.status_code == 409
    status = r.json()
    assert status["reason"] == "Conflict"
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "alice": .spec.replicas'
    assert status["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alice"', "field": ".spec.replicas"}]
    assert api.get(url).json()["spec"]["replicas"] == 2


def test_several_conflicts_are_listed_per_manager(api: httpx.Client, namespace: str) -> None:
    url = deployments(namespace, "cc")
    apply(api, url, deployment("cc", replicas=2, image="nginx:1"))
    r = apply(api, url, deployment("cc", replicas=3, image="nginx:2"), manager="bob")
    assert r.status_code == 409
    assert r.json()["message"] == ('Apply failed with 2 conflicts: conflicts with "alice":\n- .spec.replicas\n'
                                   '- .spec.template.spec.containers[name="web"].image')


def test_force_takes_ownership(api: httpx.Client, namespace: str) -> None:
    url = deployments(namespace, "f")
    apply(api, url, deployment("f", replicas=2))
    r = apply(api, url, deployment("f", replicas=5), manager="bob", force=True)
    assert r.status_code == 200, r.text
    obj = r.json()
    assert obj["spec"]["replicas"] == 5
    assert "f:replicas" in owned(obj, "bob")["f:spec"]
    assert "f:replicas" not in owned(obj, "alice")["f:spec"]
    # alice no longer owns replicas: leaving it out of her next apply does not remove it
    again = apply(api, url, deployment("f", replicas=None))
    assert again.json()["spec"]["replicas"] == 5


def test_an_update_takes_fields_from_appliers_without_conflict(api: httpx.Client, namespace: str) -> None:
    url = deployments(namespace, "u")
    apply(api, url, deployment("u", replicas=2))
    r = api.patch(url, content=b'{"spec":{"replicas":7}}', headers=MERGE, params={"fieldManager": "scaler"})
    obj = r.json()
    assert "f:replicas" not in owned(obj, "alice")["f:spec"]
    scaler = entries(obj)[("scaler", "Update")]
    assert scaler["apiVersion"] == "apps/v1" and scaler["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    conflict = apply(api, url, deployment("u", replicas=2))
    assert conflict.status_code == 409
    assert '"scaler" using apps/v1: .spec.replicas' in conflict.json()["message"]


# every write is tracked -------------------------------------------------------------------------------------


def test_create_records_its_manager_and_the_fields_it_set(api: httpx.Client, namespace: str) -> None:
    r = api.post(deployments(namespace), json=deployment("made"), params={"fieldManager": "kubectl-create"})
    (entry,) = r.json()["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("kubectl-create", "Update")
    spec = entry["fieldsV1"]["f:spec"]
    assert "f:progressDeadlineSeconds" in spec  # defaults set on create belong to the creator, as in kube
    assert spec["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}']["."] == {}
    assert "." not in spec  # spec exists in every Deployment: nobody owns it as a whole


def test_what_admission_and_the_registry_add_on_create_belongs_to_no_manager(api: httpx.Client,
                                                                             namespace: str) -> None:
    # kube's field manager records the request as decoded and defaulted, before admission and PrepareForCreate
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "owned"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod, params={"fieldManager": "maker"})
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["spec"]["volumes"] and created["spec"]["tolerations"]  # ServiceAccount, DefaultTolerationSeconds
    spec = owned(created, "maker", "Update")["f:spec"]
    assert "f:volumes" not in spec and "f:tolerations" not in spec and "f:serviceAccountName" not in spec
    container = spec["f:containers"]['k:{"name":"c"}']
    assert "f:imagePullPolicy" in container and "f:volumeMounts" not in container  # defaults yes, admission no
    assert "f:status" not in owned(created, "maker", "Update")

    name = f"{namespace}-own"
    r = api.post("/api/v1/namespaces", json={"metadata": {"name": name}}, params={"fieldManager": "maker"})
    try:
        assert r.status_code == 201, r.text
        assert r.json()["spec"]["finalizers"] == ["kubernetes"]
        # the name label is a default; the finalizer is PrepareForCreate's
        assert owned(r.json(), "maker", "Update") == {
            "f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}}
    finally:
        api.delete(f"/api/v1/namespaces/{name}")


def test_the_creator_of_a_daemon_set_owns_its_template_generation(api: httpx.Client, namespace: str) -> None:
    # as in kube, whose apps/v1 conversion writes the annotation before the field manager sees the object
    labels = {"app": "agent"}
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
          "spec": {"selector": {"matchLabels": labels}, "template": {
              "metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    url = f"/apis/apps/v1/namespaces/{namespace}/daemonsets"
    created = api.post(url, json=ds, params={"fieldManager": "maker"}).json()
    assert created["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "1"}
    assert owned(created, "maker", "Update")["f:metadata"] == {
        "f:annotations": {".": {}, "f:deprecated.daemonset.template.generation": {}}}
    created["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:2"
    del created["metadata"]["annotations"]  # a PUT without it still counts the template change
    r = api.put(f"{url}/agent", json=created, params={"fieldManager": "editor"})
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "2"}


def test_without_a_field_manager_the_user_agent_names_the_manager(api: httpx.Client, namespace: str) -> None:
    r = api.post(configmaps(namespace), json={"metadata": {"name": "ua"}, "data": {"a": "1"}},
                 headers={"User-Agent": "my-controller/v1.2 (linux)"})
    assert r.json()["metadata"]["managedFields"][0]["manager"] == "my-controller"


def test_a_status_write_is_tracked_per_subresource(api: httpx.Client, namespace: str) -> None:
    created = api.post(deployments(namespace), json=deployment("st"), params={"fieldManager": "me"}).json()
    created["status"] = {"replicas": 3}
    r = api.put(deployments(namespace, "st") + "/status", json=created, params={"fieldManager": "ctrl"})
    status_entry = [e for e in r.json()["metadata"]["managedFields"] if e["manager"] == "ctrl"][0]
    assert status_entry["subresource"] == "status"
    assert status_entry["fieldsV1"] == {"f:status": {"f:replicas": {}}}


def test_managed_fields_can_be_reset_with_one_empty_entry(api: httpx.Client, namespace: str) -> None:
    url = configmaps(namespace, "reset")
    apply(api, url, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "reset"}, "data": {"a": "1"}})
    r = api.patch(url, content=b'{"metadata":{"managedFields":[{}]}}', headers=MERGE)
    assert "managedFields" not in r.json()["metadata"]
    kept = api.patch(url, content=b'{"metadata":{"managedFields":[]}}', headers=MERGE)
    assert "managedFields" not in kept.json()["metadata"]


def test_an_object_written_before_tracking_is_owned_before_first_apply(api: httpx.Client, namespace: str) -> None:
    url = configmaps(namespace, "old")
    api.post(configmaps(namespace), json={"metadata": {"name": "old"}, "data": {"a": "1"}})
    api.patch(url, content=b'{"metadata":{"managedFields":[{}]}}', headers=MERGE)
    r = apply(api, url, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "old"}, "data": {"a": "2"}})
    assert r.status_code == 409
    assert 'conflict with "before-first-apply" using v1: .data.a' in r.json()["message"]


def test_dry_run_apply_changes_nothing(api: httpx.Client, namespace: str) -> None:
    url = configmaps(namespace, "dry")
    r = apply(api, url, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}, "data": {"a": "1"}},
              dryRun="All")
    assert r.status_code == 201 and r.json()["metadata"]["managedFields"][0]["manager"] == "alice"
    assert api.get(url).status_code == 404


def test_custom_resources_are_applied_with_their_schema(api: httpx.Client, namespace: str) -> None:
    group = f"ssa{namespace[2:]}.example.com"
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "string"},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "required": ["name"],
                            "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}}}}}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"gadgets.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": schema}}]}}
    assert api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd).status_code == 201
    url = f"/apis/{group}/v1/namespaces/{namespace}/gadgets/g"
    body = {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"},
            "spec": {"size": "s", "ports": [{"name": "http", "port": 80}]}}
    for _ in range(50):
        r = apply(api, url, body)
        if r.status_code != 404:
            break
        time.sleep(0.1)
    assert r.status_code == 201, r.text
    bob = {**body, "spec": {"ports": [{"name": "metrics", "port": 9090}]}}
    merged = apply(api, url, bob, manager="bob").json()
    assert [p["name"] for p in merged["spec"]["ports"]] == ["http", "metrics"]
    assert owned(merged, "bob") == {"f:spec": {"f:ports": {'k:{"name":"metrics"}': {
        ".": {}, "f:name": {}, "f:port": {}}}}}
    api.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group}")


# bad input ----------------------------------------------------------------------------------------------------


def test_apply_without_a_field_manager_is_invalid(api: httpx.Client, namespace: str) -> None:
    r = apply(api, configmaps(namespace, "x"), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
              manager="")
    assert r.status_code == 422
    assert r.json()["message"] == ('PatchOptions.meta.k8s.io "" is invalid: '
                                   'fieldManager: Required value: is required for apply patch')


def test_force_on_another_patch_type_is_invalid(api: httpx.Client, namespace: str) -> None:
    api.post(configmaps(namespace), json={"metadata": {"name": "fp"}})
    r = api.patch(configmaps(namespace, "fp"), content=b"{}", headers=MERGE, params={"force": "true"})
    assert r.status_code == 422
    assert "force: Forbidden: may not be specified for non-apply patch" in r.json()["message"]


def test_an_overlong_field_manager_is_invalid(api: httpx.Client, namespace: str) -> None:
    r = api.post(configmaps(namespace), json={"metadata": {"name": "long"}}, params={"fieldManager": "m" * 129})
    assert r.status_code == 422
    assert "fieldManager: Too long" in r.json()["message"]
    assert api.get(configmaps(namespace, "long")).status_code == 404


def test_bad_apply_bodies_are_bad_requests(api: httpx.Client, namespace: str) -> None:
    url = configmaps(namespace, "bad")
    cases = [
        ("{not yaml: [", "error"),
        ("- a list", "object"),
        (orjson.dumps({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "bad"}}).decode(),
         "Incorrect version specified in apply patch"),
        (orjson.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad"}}).decode(),
         "Incorrect kind"),
        (orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}}).decode(),
         "does not match the name on the URL"),
        (orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "bad", "managedFields": [{"manager": "x"}]}}).decode(),
         "metadata.managedFields must be nil"),
    ]
    for body, text in cases:
        r = apply(api, url, body)
        assert r.status_code == 400, (body, r.text)
        assert text in r.json()["message"], (body, r.text)
    assert api.get(url).status_code == 404


def test_unknown_fields_in_an_apply_follow_field_validation(api: httpx.Client, namespace: str) -> None:
    url = configmaps(namespace, "uf")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "uf"}, "data": {"a": "1"}, "bogus": 1}
    strict = apply(api, url, body, fieldValidation="Strict")
    assert strict.status_code == 400 and 'unknown field "bogus"' in strict.json()["message"]
    warned = apply(api, url, body, fieldValidation="Warn")
    assert warned.status_code == 201 and "bogus" in warned.headers["warning"]
    assert "bogus" not in warned.json()


def test_duplicate_list_map_keys_in_an_apply_are_invalid(api: httpx.Client, namespace: str) -> None:
    body = deployment("dup")
    body["spec"]["template"]["spec"]["containers"].append({"name": "web", "image": "other"})
    r = apply(api, deployments(namespace, "dup"), body)
    assert r.status_code == 422, r.text
    assert "duplicate entries for key" in r.json()["message"]
    assert api.get(deployments(namespace, "dup")).status_code == 404
