"""`dryRun=All` on every mutating verb: the answer is what would have been stored, and nothing is stored.

A dry-run request goes through every stage a real one does (decoding, defaulting, admission, validation,
conflict and precondition checks) and stops just before the write: the response shows the object as it
would be, errors are the errors the real request would get, and afterwards the stored object (its data and
its resourceVersion) is exactly what it was. Claims a write makes outside the object's own key, such as a
Service's cluster IP or node port, must not outlive a dry run either. kubectl sends `dryRun=All` for
`--dry-run=server` and for `kubectl diff`.
"""

from __future__ import annotations

import random
from typing import Any

import httpx
import pytest

DRY = {"dryRun": "All"}
MERGE = {"Content-Type": "application/merge-patch+json"}
JSON_PATCH = {"Content-Type": "application/json-patch+json"}
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}


# builders and helpers ---------------------------------------------------------------------------------


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels or {}},
            "data": data}


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}], **spec}}


def deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "nginx:1.27"},
                                                          {"name": "sidecar", "image": "busybox:1.36"}]}}}}


def service(name: str, cluster_ip: str = "", node_port: int = 0) -> dict[str, Any]:
    port: dict[str, Any] = {"port": 80}
    spec: dict[str, Any] = {"selector": {"app": name}, "ports": [port]}
    if cluster_ip:
        spec["clusterIP"] = cluster_ip
    if node_port:
        spec["type"], port["nodePort"] = "NodePort", node_port
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def unlikely_ip() -> str:
    """An address of the service range that nothing else in the session is likely to hold."""
    return f"10.100.{random.randrange(256)}.{random.randrange(1, 255)}"


def unlikely_node_port() -> int:
    return random.randrange(31000, 32700)


def cm_url(ns: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/configmaps" + (f"/{name}" if name else "")


def deploy_url(ns: str, name: str = "") -> str:
    return f"/apis/apps/v1/namespaces/{ns}/deployments" + (f"/{name}" if name else "")


def svc_url(ns: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/services" + (f"/{name}" if name else "")


def created(api: httpx.Client, url: str, body: dict[str, Any]) -> dict[str, Any]:
    r = api.post(url, json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


def stored(api: httpx.Client, url: str) -> dict[str, Any]:
    r = api.get(url)
    assert r.status_code == 200, r.text
    return dict(r.json())


def assert_untouched(api: httpx.Client, url: str, before: dict[str, Any]) -> None:
    """The object at `url` is exactly `before`: same content, same resourceVersion."""
    after = stored(api, url)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after == before


# create ------------------------------------------------------------------------------------------------


def test_dry_run_create_answers_the_defaulted_object_and_stores_nothing(api: httpx.Client,
                                                                        namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/pods"
    r = api.post(url, json=pod("ghost"), params=DRY)
    assert r.status_code == 201, r.text
    answer = r.json()
    assert answer["metadata"]["name"] == "ghost" and answer["metadata"]["namespace"] == namespace
    assert answer["metadata"]["uid"] and answer["metadata"]["creationTimestamp"]
    assert answer["spec"]["restartPolicy"] == "Always"  # defaulting ran
    assert answer["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert answer["status"]["phase"] == "Pending"
    assert api.get(f"{url}/ghost").status_code == 404
    assert api.get(url).json()["items"] == []


def test_dry_run_create_with_generate_name_shows_a_name_but_stores_nothing(api: httpx.Client,
                                                                          namespace: str) -> None:
    body = configmap("")
    body["metadata"] = {"generateName": "draft-"}
    r = api.post(cm_url(namespace), json=body, params=DRY)
    assert r.status_code == 201, r.text
    name = r.json()["metadata"]["name"]
    assert name.startswith("draft-") and len(name) > len("draft-")
    assert api.get(cm_url(namespace, name)).status_code == 404


def test_dry_run_create_of_an_invalid_object_is_still_422(api: httpx.Client, namespace: str) -> None:
    r = api.post(cm_url(namespace), json=configmap("Not_Valid"), params=DRY)
    assert r.status_code == 422, r.text
    assert r.json()["reason"] == "Invalid"
    assert r.json()["details"]["causes"][0]["field"] == "metadata.name"
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("bad", restartPolicy="Sometimes"), params=DRY)
    assert r.status_code == 422 and "spec.restartPolicy" in r.json()["message"]


def test_dry_run_create_in_a_missing_namespace_is_not_found(api: httpx.Client) -> None:
    r = api.post(cm_url("no-such-namespace"), json=configmap("c"), params=DRY)
    assert r.status_code == 404 and r.json()["message"] == 'namespaces "no-such-namespace" not found'


def test_dry_run_create_of_an_existing_name_is_already_exists(api: httpx.Client, namespace: str) -> None:
    before = created(api, cm_url(namespace), configmap("taken", v="real"))
    r = api.post(cm_url(namespace), json=configmap("taken", v="dry"), params=DRY)
    assert r.status_code == 409, r.text
    assert r.json()["reason"] == "AlreadyExists"
    assert_untouched(api, cm_url(namespace, "taken"), before)


# update ------------------------------------------------------------------------------------------------


def test_dry_run_update_answers_the_new_object_and_keeps_the_old(api: httpx.Client, namespace: str) -> None:
    before = created(api, cm_url(namespace), configmap("conf", level="1"))
    r = api.put(cm_url(namespace, "conf"), json=dict(before, data={"level": "2"}), params=DRY)
    assert r.status_code == 200, r.text
    assert r.json()["data"] == {"level": "2"}
    assert r.json()["metadata"]["uid"] == before["metadata"]["uid"]
    assert r.json()["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]  # nothing written
    assert_untouched(api, cm_url(namespace, "conf"), before)


def test_dry_run_update_of_a_spec_shows_the_next_generation_without_storing_it(api: httpx.Client,
                                                                              namespace: str) -> None:
    before = created(api, deploy_url(namespace), deployment("gen"))
    changed = dict(before, spec=dict(before["spec"], replicas=4))
    r = api.put(deploy_url(namespace, "gen"), json=changed, params=DRY)
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["replicas"] == 4 and r.json()["metadata"]["generation"] == 2
    assert_untouched(api, deploy_url(namespace, "gen"), before)


def test_dry_run_update_to_an_invalid_object_is_still_422(api: httpx.Client, namespace: str) -> None:
    before = created(api, deploy_url(namespace), deployment("strict"))
    broken = dict(before, spec=dict(before["spec"], replicas=-1))
    r = api.put(deploy_url(namespace, "strict"), json=broken, params=DRY)
    assert r.status_code == 422 and "spec.replicas" in r.json()["message"]
    assert_untouched(api, deploy_url(namespace, "strict"), before)


def test_dry_run_update_with_a_stale_resource_version_is_a_conflict(api: httpx.Client, namespace: str) -> None:
    first = created(api, cm_url(namespace), configmap("race", n="1"))
    second = api.put(cm_url(namespace, "race"), json=dict(first, data={"n": "2"})).json()
    r = api.put(cm_url(namespace, "race"), json=dict(first, data={"n": "3"}), params=DRY)
    assert r.status_code == 409 and r.json()["reason"] == "Conflict"
    assert_untouched(api, cm_url(namespace, "race"), second)


def test_dry_run_update_of_a_missing_object_is_not_found(api: httpx.Client, namespace: str) -> None:
    r = api.put(cm_url(namespace, "nope"), json=configmap("nope"), params=DRY)
    assert r.status_code == 404


# patch ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("headers", "patch"), [
    pytest.param(MERGE, b'{"data":{"a":"10","b":null}}', id="merge"),
    pytest.param(JSON_PATCH, b'[{"op":"replace","path":"/data/a","value":"10"},{"op":"remove","path":"/data/b"}]',
                 id="json"),
    pytest.param(STRATEGIC, b'{"data":{"a":"10","b":null}}', id="strategic"),
])
def test_dry_run_patch_answers_the_patched_object_and_keeps_the_old(api: httpx.Client, namespace: str,
                                                                    headers: dict[str, str],
                                                                    patch: bytes) -> None:
    before = created(api, cm_url(namespace), configmap("p", a="1", b="2"))
    r = api.patch(cm_url(namespace, "p"), content=patch, headers=headers, params=DRY)
    assert r.status_code == 200, r.text
    assert r.json()["data"] == {"a": "10"}
    assert r.json()["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert_untouched(api, cm_url(namespace, "p"), before)


def test_dry_run_strategic_patch_merges_containers_by_name(api: httpx.Client, namespace: str) -> None:
    before = created(api, deploy_url(namespace), deployment("smp"))
    patch = b'{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox:1.37"}]}}}}'
    r = api.patch(deploy_url(namespace, "smp"), content=patch, headers=STRATEGIC, params=DRY)
    assert r.status_code == 200, r.text
    containers = r.json()["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("app", "nginx:1.27"), ("sidecar", "busybox:1.37")]
    assert r.json()["metadata"]["generation"] == 2
    assert_untouched(api, deploy_url(namespace, "smp"), before)


def test_dry_run_json_patch_with_a_failing_test_is_still_422(api: httpx.Client, namespace: str) -> None:
    before = created(api, cm_url(namespace), configmap("t", a="1"))
    patch = b'[{"op":"test","path":"/data/a","value":"2"},{"op":"replace","path":"/data/a","value":"3"}]'
    r = api.patch(cm_url(namespace, "t"), content=patch, headers=JSON_PATCH, params=DRY)
    assert r.status_code == 422, r.text
    assert_untouched(api, cm_url(namespace, "t"), before)


def test_dry_run_patch_that_makes_the_object_invalid_is_still_422(api: httpx.Client, namespace: str) -> None:
    before = created(api, deploy_url(namespace), deployment("inv"))
    r = api.patch(deploy_url(namespace, "inv"), content=b'{"spec":{"replicas":-3}}', headers=MERGE, params=DRY)
    assert r.status_code == 422 and "spec.replicas" in r.json()["message"]
    assert_untouched(api, deploy_url(namespace, "inv"), before)


# delete ------------------------------------------------------------------------------------------------


def test_dry_run_delete_answers_success_and_keeps_the_object(api: httpx.Client, namespace: str) -> None:
    before = created(api, cm_url(namespace), configmap("keep", v="1"))
    r = api.delete(cm_url(namespace, "keep"), params=DRY)
    assert r.status_code == 200, r.text
    assert r.json()["kind"] == "Status" and r.json()["status"] == "Success"
    assert_untouched(api, cm_url(namespace, "keep"), before)


def test_dry_run_delete_in_the_body_as_kubectl_sends_it(api: httpx.Client, namespace: str) -> None:
    before = created(api, cm_url(namespace), configmap("body", v="1"))
    r = api.request("DELETE", cm_url(namespace, "body"),
                    json={"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"],
                          "propagationPolicy": "Background"})
    assert r.status_code == 200, r.text
    assert_untouched(api, cm_url(namespace, "body"), before)


def test_dry_run_delete_of_an_object_with_finalizers_shows_the_mark_without_setting_it(
        api: httpx.Client, namespace: str) -> None:
    body = configmap("held")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    before = created(api, cm_url(namespace), body)
    r = api.delete(cm_url(namespace, "held"), params=DRY)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["deletionTimestamp"]
    assert_untouched(api, cm_url(namespace, "held"), before)
    assert "deletionTimestamp" not in before["metadata"]


def test_dry_run_graceful_delete_of_a_bound_pod_sets_no_deletion_timestamp(api: httpx.Client,
                                                                           namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/pods"
    before = created(api, url, pod("bound", nodeName="node-1"))
    r = api.delete(f"{url}/bound", params=DRY)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["deletionGracePeriodSeconds"] == 30
    assert_untouched(api, f"{url}/bound", before)


def test_dry_run_delete_with_a_failing_precondition_is_still_a_conflict(api: httpx.Client,
                                                                        namespace: str) -> None:
    before = created(api, cm_url(namespace), configmap("pre"))
    r = api.request("DELETE", cm_url(namespace, "pre"), params=DRY, json={"preconditions": {"uid": "other"}})
    assert r.status_code == 409, r.text
    assert_untouched(api, cm_url(namespace, "pre"), before)


def test_dry_run_delete_of_a_missing_object_is_not_found(api: httpx.Client, namespace: str) -> None:
    assert api.delete(cm_url(namespace, "nope"), params=DRY).status_code == 404


def test_dry_run_delete_collection_lists_the_matches_and_deletes_none(api: httpx.Client, namespace: str) -> None:
    for name, color in (("red-1", "red"), ("red-2", "red"), ("blue-1", "blue")):
        created(api, cm_url(namespace), configmap(name, {"color": color}))
    ours = cm_url(namespace) + "?labelSelector=color"  # not kube-root-ca.crt, which may appear meanwhile
    before = stored(api, ours)["items"]
    r = api.delete(cm_url(namespace), params={**DRY, "labelSelector": "color=red"})
    assert r.status_code == 200, r.text
    assert sorted(item["metadata"]["name"] for item in r.json()["items"]) == ["red-1", "red-2"]
    assert stored(api, ours)["items"] == before


def test_dry_run_delete_of_a_namespace_leaves_it_active(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}"
    before = stored(api, url)
    r = api.delete(url, params=DRY)
    assert r.status_code == 200, r.text
    assert r.json()["status"]["phase"] == "Terminating"
    assert_untouched(api, url, before)
    assert api.post(cm_url(namespace), json=configmap("still-open")).status_code == 201


# subresources ------------------------------------------------------------------------------------------


def test_dry_run_status_update_answers_the_new_status_and_keeps_the_old(api: httpx.Client,
                                                                        namespace: str) -> None:
    before = created(api, deploy_url(namespace), deployment("st"))
    r = api.put(deploy_url(namespace, "st") + "/status", json=dict(before, status={"replicas": 3}), params=DRY)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == {"replicas": 3}
    assert_untouched(api, deploy_url(namespace, "st"), before)


def test_dry_run_status_patch_keeps_the_old_status(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/pods"
    before = created(api, url, pod("runner"))
    r = api.patch(f"{url}/runner/status", content=b'{"status":{"phase":"Running"}}', headers=MERGE, params=DRY)
    assert r.status_code == 200, r.text
    assert r.json()["status"]["phase"] == "Running"
    assert_untouched(api, f"{url}/runner", before)


@pytest.mark.parametrize("verb", ["patch", "put"])
def test_dry_run_scale_answers_the_new_scale_and_keeps_the_replicas(api: httpx.Client, namespace: str,
                                                                    verb: str) -> None:
    before = created(api, deploy_url(namespace), deployment("sc", replicas=2))
    url = deploy_url(namespace, "sc") + "/scale"
    if verb == "patch":
        r = api.patch(url, content=b'{"spec":{"replicas":7}}', headers=MERGE, params=DRY)
    else:
        scale = stored(api, url)
        r = api.put(url, json=dict(scale, spec={"replicas": 7}), params=DRY)
    assert r.status_code == 200, r.text
    assert r.json()["kind"] == "Scale" and r.json()["spec"]["replicas"] == 7
    assert_untouched(api, deploy_url(namespace, "sc"), before)
    assert stored(api, url)["spec"]["replicas"] == 2


def test_dry_run_scale_to_a_negative_count_is_still_422(api: httpx.Client, namespace: str) -> None:
    before = created(api, deploy_url(namespace), deployment("neg"))
    r = api.patch(deploy_url(namespace, "neg") + "/scale", content=b'{"spec":{"replicas":-1}}', headers=MERGE,
                  params=DRY)
    assert r.status_code == 422, r.text
    assert_untouched(api, deploy_url(namespace, "neg"), before)


# services: addresses outside the object's key -----------------------------------------------------------


def test_dry_run_create_of_a_service_answers_its_cluster_ip_but_keeps_none(api: httpx.Client,
                                                                         namespace: str) -> None:
    ip = unlikely_ip()
    r = api.post(svc_url(namespace), json=service("dry", cluster_ip=ip), params=DRY)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["clusterIP"] == ip and r.json()["spec"]["clusterIPs"] == [ip]
    assert api.get(svc_url(namespace, "dry")).status_code == 404
    # the address is still free: a real service (even under another name) can have it
    real = created(api, svc_url(namespace), service("real", cluster_ip=ip))
    assert real["spec"]["clusterIP"] == ip


def test_dry_run_create_of_a_node_port_service_keeps_no_node_port(api: httpx.Client, namespace: str) -> None:
    port = unlikely_node_port()
    r = api.post(svc_url(namespace), json=service("dry", node_port=port), params=DRY)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["ports"][0]["nodePort"] == port
    real = created(api, svc_url(namespace), service("real", node_port=port))
    assert real["spec"]["ports"][0]["nodePort"] == port


def test_dry_run_create_of_a_service_with_a_taken_cluster_ip_is_still_422(api: httpx.Client,
                                                                         namespace: str) -> None:
    ip = unlikely_ip()
    created(api, svc_url(namespace), service("owner", cluster_ip=ip))
    r = api.post(svc_url(namespace), json=service("intruder", cluster_ip=ip), params=DRY)
    assert r.status_code == 422, r.text
    assert r.json()["details"]["causes"][0]["field"] == "spec.clusterIPs"
    assert "already allocated" in r.json()["message"]


def test_dry_run_create_of_a_service_with_a_taken_node_port_is_still_422(api: httpx.Client,
                                                                        namespace: str) -> None:
    port = unlikely_node_port()
    created(api, svc_url(namespace), service("owner", node_port=port))
    r = api.post(svc_url(namespace), json=service("intruder", node_port=port), params=DRY)
    assert r.status_code == 422, r.text
    assert r.json()["details"]["causes"][0]["field"] == "spec.ports[0].nodePort"


def test_dry_run_delete_of_a_service_keeps_its_cluster_ip_taken(api: httpx.Client, namespace: str) -> None:
    ip = unlikely_ip()
    before = created(api, svc_url(namespace), service("owner", cluster_ip=ip))
    assert api.delete(svc_url(namespace, "owner"), params=DRY).status_code == 200
    assert_untouched(api, svc_url(namespace, "owner"), before)
    r = api.post(svc_url(namespace), json=service("intruder", cluster_ip=ip))
    assert r.status_code == 422 and "already allocated" in r.json()["message"]


def test_dry_run_update_of_a_service_to_node_port_keeps_no_port(api: httpx.Client, namespace: str) -> None:
    port = unlikely_node_port()
    before = created(api, svc_url(namespace), service("grow"))
    changed = dict(before, spec=dict(before["spec"], type="NodePort", ports=[{"port": 80, "nodePort": port}]))
    r = api.put(svc_url(namespace, "grow"), json=changed, params=DRY)
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["type"] == "NodePort" and r.json()["spec"]["ports"][0]["nodePort"] == port
    assert_untouched(api, svc_url(namespace, "grow"), before)
    assert created(api, svc_url(namespace), service("other", node_port=port))["spec"]["ports"][0]["nodePort"] == port


def test_dry_run_update_of_a_service_to_a_taken_node_port_is_still_422(api: httpx.Client,
                                                                      namespace: str) -> None:
    port = unlikely_node_port()
    created(api, svc_url(namespace), service("owner", node_port=port))
    before = created(api, svc_url(namespace), service("grow"))
    changed = dict(before, spec=dict(before["spec"], type="NodePort", ports=[{"port": 80, "nodePort": port}]))
    r = api.put(svc_url(namespace, "grow"), json=changed, params=DRY)
    assert r.status_code == 422, r.text
    assert r.json()["details"]["causes"][0]["field"] == "spec.ports[0].nodePort"
    assert_untouched(api, svc_url(namespace, "grow"), before)


# the dryRun parameter itself ---------------------------------------------------------------------------


def _bad_dry_run(api: httpx.Client, namespace: str, verb: str) -> tuple[httpx.Response, str]:
    """Send `verb` with `dryRun=Maybe` against a configmap `target`; returns the answer and its URL."""
    created(api, cm_url(namespace), configmap("target", v="1"))
    url, bad = cm_url(namespace, "target"), {"dryRun": "Maybe"}
    if verb == "create":
        return api.post(cm_url(namespace), json=configmap("new"), params=bad), cm_url(namespace, "new")
    if verb == "update":
        return api.put(url, json=configmap("target", v="2"), params=bad), url
    if verb == "patch":
        return api.patch(url, content=b'{"data":{"v":"2"}}', headers=MERGE, params=bad), url
    if verb == "delete":
        return api.delete(url, params=bad), url
    assert verb == "delete-body"
    return api.request("DELETE", url, json={"dryRun": ["Maybe"]}), url


@pytest.mark.parametrize("verb", ["create", "update", "patch", "delete", "delete-body"])
def test_an_unknown_dry_run_value_is_refused_and_nothing_happens(api: httpx.Client, namespace: str,
                                                                 verb: str) -> None:
    r, url = _bad_dry_run(api, namespace, verb)
    assert r.status_code == 422, r.text
    assert 'dryRun: Unsupported value' in r.json()["message"] and "Maybe" in r.json()["message"]
    assert 'supported values: "All"' in r.json()["message"]
    if verb == "create":
        assert api.get(url).status_code == 404
    else:
        assert stored(api, url)["data"] == {"v": "1"}


def test_an_unknown_dry_run_value_on_delete_is_invalid_delete_options(api: httpx.Client, namespace: str) -> None:
    r, _ = _bad_dry_run(api, namespace, "delete")
    assert r.status_code == 422 and r.json()["reason"] == "Invalid"
    assert r.json()["message"] == \
        'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Maybe"}: supported values: "All"'


@pytest.mark.parametrize(("verb", "options"), [("create", "CreateOptions"), ("update", "UpdateOptions"),
                                               ("patch", "PatchOptions")])
def test_an_unknown_dry_run_value_is_invalid_options_as_in_kube(api: httpx.Client, namespace: str, verb: str,
                                                                options: str) -> None:
    r, _ = _bad_dry_run(api, namespace, verb)
    assert r.status_code == 422 and r.json()["reason"] == "Invalid"
    assert r.json()["message"] == \
        f'{options}.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{{"Maybe"}}: supported values: "All"'


def test_an_empty_dry_run_value_is_a_real_write(api: httpx.Client, namespace: str) -> None:
    r = api.post(cm_url(namespace), json=configmap("real"), params={"dryRun": ""})
    assert r.status_code == 201, r.text
    assert stored(api, cm_url(namespace, "real"))["metadata"]["uid"] == r.json()["metadata"]["uid"]
