"""The official `kubernetes` Python client against a cluster started with `mkpy up`.

The Python client is the other everyday client of an apiserver, and it differs from kubectl on the wire: it
sends JSON bodies without a Content-Type, asks for `/version/` with a trailing slash, uses typed APIs
(`CoreV1Api`, `AppsV1Api`), picks a patch's Content-Type from the body (a list is a JSON patch, a dict a
strategic merge patch unless `_content_type` says otherwise), and reads watch streams line by line. These
tests do CRUD on pods, configmaps and deployments, patch them with each patch type, list with selectors and
pages, and watch changes, all through the client's own API.
Each test works in its own namespace of the session's shared cluster.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.e2e.conftest import KubeCluster, unique, wait_until

pytestmark = pytest.mark.e2e

WATCH_SECONDS = 10  # server-side timeout of every watch here: a watch that misses an event ends, not hangs


# clients and builders ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def api_client(cluster: KubeCluster) -> Iterator[client.ApiClient]:
    api = cluster.api_client()
    yield api
    api.close()


@pytest.fixture(scope="module")
def core(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="module")
def apps(api_client: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api_client)


@pytest.fixture()
def ns(core: client.CoreV1Api) -> str:
    """A fresh namespace, created through the Python client."""
    name = unique("py")
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels), data=data)


def pod(name: str, labels: dict[str, str] | None = None, scheduler_name: str | None = None) -> client.V1Pod:
    return client.V1Pod(metadata=client.V1ObjectMeta(name=name, labels=labels),
                        spec=client.V1PodSpec(containers=[client.V1Container(name="app", image="nginx:1.27")],
                                              scheduler_name=scheduler_name))


def deployment(name: str, replicas: int = 1, image: str = "nginx:1.27") -> client.V1Deployment:
    labels = {"app": name}
    template = client.V1PodTemplateSpec(
        metadata=client.V1ObjectMeta(labels=labels),
        spec=client.V1PodSpec(containers=[client.V1Container(name="app", image=image)]))
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1DeploymentSpec(replicas=replicas, selector=client.V1LabelSelector(match_labels=labels),
                                     template=template))


def status_of(call: Any) -> int:
    """The HTTP status of the ApiException a call raises."""
    with pytest.raises(ApiException) as raised:
        call()
    return raised.value.status


# version ------------------------------------------------------------------------------------------------


def test_version_api_reports_1_32(api_client: client.ApiClient) -> None:
    info = client.VersionApi(api_client).get_code()
    assert (info.major, info.minor) == ("1", "32")


# configmaps ---------------------------------------------------------------------------------------------


def test_configmap_create_read_replace_delete(core: client.CoreV1Api, ns: str) -> None:
    created = core.create_namespaced_config_map(ns, configmap("cfg", color="blue"))
    assert created.metadata.uid and created.metadata.resource_version
    read = core.read_namespaced_config_map("cfg", ns)
    assert read.data == {"color": "blue"} and read.metadata.uid == created.metadata.uid

    read.data["color"] = "green"
    replaced = core.replace_namespaced_config_map("cfg", ns, read)
    assert replaced.data == {"color": "green"}
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)

    core.delete_namespaced_config_map("cfg", ns)
    assert status_of(lambda: core.read_namespaced_config_map("cfg", ns)) == 404


def test_configmap_replace_with_a_stale_resource_version_is_a_conflict(core: client.CoreV1Api, ns: str) -> None:
    stale = core.create_namespaced_config_map(ns, configmap("race", n="1"))
    fresh = core.read_namespaced_config_map("race", ns)
    fresh.data["n"] = "2"
    core.replace_namespaced_config_map("race", ns, fresh)
    stale.data["n"] = "3"
    with pytest.raises(ApiException) as raised:
        core.replace_namespaced_config_map("race", ns, stale)
    assert raised.value.status == 409
    assert "the object has been modified" in raised.value.body
    assert core.read_namespaced_config_map("race", ns).data == {"n": "2"}


def test_configmap_json_patch_changes_one_key(core: client.CoreV1Api, ns: str) -> None:
    core.create_namespaced_config_map(ns, configmap("patched", a="1", b="2"))
    # a list body makes the client send application/json-patch+json (RFC 6902)
    core.patch_namespaced_config_map("patched", ns, [{"op": "replace", "path": "/data/a", "value": "10"},
                                                     {"op": "remove", "path": "/data/b"}])
    assert core.read_namespaced_config_map("patched", ns).data == {"a": "10"}


def test_creating_the_same_configmap_twice_is_already_exists(core: client.CoreV1Api, ns: str) -> None:
    core.create_namespaced_config_map(ns, configmap("once"))
    assert status_of(lambda: core.create_namespaced_config_map(ns, configmap("once"))) == 409


def test_an_invalid_configmap_is_rejected_with_422(core: client.CoreV1Api, ns: str) -> None:
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_config_map(ns, configmap("Not_Valid"))
    assert raised.value.status == 422
    assert '"reason":"Invalid"' in raised.value.body.replace(" ", "")


# pods ----------------------------------------------------------------------------------------------------


def test_pod_create_gets_defaults_and_a_pending_status(core: client.CoreV1Api, ns: str) -> None:
    created = core.create_namespaced_pod(ns, pod("p", {"app": "web"}))
    assert created.status.phase == "Pending"
    assert created.status.qos_class == "BestEffort"
    spec = created.spec
    assert (spec.restart_policy, spec.dns_policy, spec.scheduler_name) == ("Always", "ClusterFirst",
                                                                           "default-scheduler")
    assert spec.termination_grace_period_seconds == 30
    assert spec.containers[0].image_pull_policy == "IfNotPresent"


def test_pod_delete_of_an_unscheduled_pod_removes_it_at_once(core: client.CoreV1Api, ns: str) -> None:
    core.create_namespaced_pod(ns, pod("gone"))
    core.delete_namespaced_pod("gone", ns)
    assert status_of(lambda: core.read_namespaced_pod("gone", ns)) == 404


def test_pod_status_is_written_through_the_status_subresource_only(core: client.CoreV1Api, ns: str) -> None:
    core.create_namespaced_pod(ns, pod("st", scheduler_name="none"))  # no scheduler writes to it meanwhile
    live = core.read_namespaced_pod("st", ns)
    live.status.phase = "Running"
    live.spec.containers[0].image = "nginx:9.9"
    updated = core.replace_namespaced_pod_status("st", ns, live)
    assert updated.status.phase == "Running"
    assert updated.spec.containers[0].image == "nginx:1.27", "a status write must not change the spec"
    again = core.read_namespaced_pod("st", ns)
    again.status.phase = "Failed"
    core.replace_namespaced_pod("st", ns, again)
    assert core.read_namespaced_pod("st", ns).status.phase == "Running", "a main write must not change status"


def test_pods_list_with_label_and_field_selectors(core: client.CoreV1Api, ns: str) -> None:
    for name, labels in (("a", {"app": "web", "tier": "front"}), ("b", {"app": "web"}), ("c", {"app": "db"})):
        core.create_namespaced_pod(ns, pod(name, labels))

    def listed(**selectors: str) -> set[str]:
        return {p.metadata.name for p in core.list_namespaced_pod(ns, **selectors).items}

    assert listed(label_selector="app=web") == {"a", "b"}
    assert listed(label_selector="app in (web,db),!tier") == {"b", "c"}
    assert listed(field_selector="metadata.name=c") == {"c"}
    assert listed(label_selector="app=web", field_selector="metadata.name!=a") == {"b"}
    everywhere = core.list_pod_for_all_namespaces(label_selector="app=db", field_selector=f"metadata.namespace={ns}")
    assert [p.metadata.name for p in everywhere.items] == ["c"]


def test_lists_come_in_pages_with_continue_tokens(core: client.CoreV1Api, ns: str) -> None:
    for i in range(5):
        core.create_namespaced_config_map(ns, configmap(f"page-{i}"))
    seen, token, pages = [], None, 0
    while True:
        page = core.list_namespaced_config_map(ns, limit=2, _continue=token,
                                               field_selector="metadata.name!=kube-root-ca.crt")
        seen += [c.metadata.name for c in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
    assert seen == [f"page-{i}" for i in range(5)] and pages == 3


# deployments ----------------------------------------------------------------------------------------------


def retry_on_conflict(read: Callable[[], Any], write: Callable[[Any], Any], attempts: int = 5) -> Any:
    """A read-modify-write as clients write it: the deployment controller writes the same object meanwhile,
    so a replace can lose the race (409) and is done again on a fresh copy."""
    for _ in range(attempts - 1):
        try:
            return write(read())
        except ApiException as error:
            if error.status != 409:
                raise
    return write(read())


def settled_deployment(apps: client.AppsV1Api, name: str, ns: str) -> Any:
    """The deployment once its controllers have stopped writing it (the same resourceVersion 1 s apart)."""
    previous = apps.read_namespaced_deployment(name, ns)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        time.sleep(1)
        current = apps.read_namespaced_deployment(name, ns)
        if current.metadata.resource_version == previous.metadata.resource_version:
            return current
        previous = current
    raise AssertionError(f"deployment {name} kept changing for 20 s")


def test_deployment_create_read_replace_delete(apps: client.AppsV1Api, ns: str) -> None:
    created = apps.create_namespaced_deployment(ns, deployment("web", replicas=2))
    assert created.metadata.generation == 1
    assert created.spec.strategy.type == "RollingUpdate"  # defaulted by the server
    assert created.spec.template.spec.containers[0].image == "nginx:1.27"

    def new_image(live: Any) -> Any:
        live.spec.template.spec.containers[0].image = "nginx:1.28"
        return apps.replace_namespaced_deployment("web", ns, live)
    replaced = retry_on_conflict(lambda: apps.read_namespaced_deployment("web", ns), new_image)
    assert replaced.metadata.generation == 2

    apps.delete_namespaced_deployment("web", ns)
    assert status_of(lambda: apps.read_namespaced_deployment("web", ns)) == 404


def test_deployment_scale_subresource_reads_and_writes_replicas(apps: client.AppsV1Api, ns: str) -> None:
    apps.create_namespaced_deployment(ns, deployment("sc", replicas=1))
    scale = apps.read_namespaced_deployment_scale("sc", ns)
    assert (scale.spec.replicas, scale.status.selector) == (1, "app=sc")
    def four(current: Any) -> Any:
        current.spec.replicas = 4
        return apps.replace_namespaced_deployment_scale("sc", ns, current)
    retry_on_conflict(lambda: apps.read_namespaced_deployment_scale("sc", ns), four)
    assert apps.read_namespaced_deployment("sc", ns).spec.replicas == 4


def test_deployment_status_write_does_not_bump_generation(apps: client.AppsV1Api, ns: str) -> None:
    apps.create_namespaced_deployment(ns, deployment("gen"))

    def new_status(live: Any) -> Any:
        live.status = client.V1DeploymentStatus(replicas=1, ready_replicas=1, observed_generation=1)
        return apps.replace_namespaced_deployment_status("gen", ns, live)
    updated = retry_on_conflict(lambda: apps.read_namespaced_deployment("gen", ns), new_status)
    assert updated.status.ready_replicas == 1
    assert updated.metadata.generation == 1


def test_deployments_list_with_a_label_selector(apps: client.AppsV1Api, ns: str) -> None:
    for name in ("alpha", "beta"):
        body = deployment(name)
        body.metadata.labels = {"team": name}
        apps.create_namespaced_deployment(ns, body)
    listed = apps.list_namespaced_deployment(ns, label_selector="team=beta").items
    assert [d.metadata.name for d in listed] == ["beta"]


# watch -----------------------------------------------------------------------------------------------------


def test_watch_from_a_resource_version_sees_added_modified_deleted(core: client.CoreV1Api, ns: str) -> None:
    start = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, configmap("w", v="1"))
    core.patch_namespaced_config_map("w", ns, [{"op": "replace", "path": "/data/v", "value": "2"}])
    core.delete_namespaced_config_map("w", ns)

    seen = []
    stream = watch.Watch()
    # only "w": the namespace's kube-root-ca.crt may be created meanwhile
    for event in stream.stream(core.list_namespaced_config_map, ns, resource_version=start,
                               field_selector="metadata.name=w", timeout_seconds=WATCH_SECONDS):
        seen.append((event["type"], event["object"].metadata.name, (event["object"].data or {}).get("v")))
        if event["type"] == "DELETED":
            stream.stop()
    assert seen == [("ADDED", "w", "1"), ("MODIFIED", "w", "2"), ("DELETED", "w", "2")]


def test_a_running_watch_sees_changes_as_they_happen(core: client.CoreV1Api, ns: str) -> None:
    # pods for a scheduler nobody runs, so that the cluster's scheduler does not change them meanwhile
    core.create_namespaced_pod(ns, pod("before", scheduler_name="none"))
    seen: list[tuple[str, str]] = []
    stream = watch.Watch()

    def consume() -> None:
        # no resourceVersion: the current pods arrive first as ADDED, then the changes
        for event in stream.stream(core.list_namespaced_pod, ns, timeout_seconds=WATCH_SECONDS):
            seen.append((event["type"], event["object"].metadata.name))
            if event["type"] == "DELETED":
                stream.stop()

    watcher = threading.Thread(target=consume, daemon=True)
    watcher.start()
    wait_until(lambda: ("ADDED", "before") in seen, "the synthetic ADDED event of the existing pod")
    core.create_namespaced_pod(ns, pod("during", scheduler_name="none"))
    core.patch_namespaced_pod("during", ns, [{"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}])
    core.delete_namespaced_pod("during", ns)
    watcher.join(WATCH_SECONDS + 5)
    assert not watcher.is_alive(), f"the watch never saw the DELETED event; it saw {seen}"
    assert seen == [("ADDED", "before"), ("ADDED", "during"), ("MODIFIED", "during"), ("DELETED", "during")]


def test_watch_with_a_selector_sees_objects_enter_and_leave_it(core: client.CoreV1Api, ns: str) -> None:
    start = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, configmap("mover", {"stage": "draft"}))
    core.patch_namespaced_config_map("mover", ns, [{"op": "replace", "path": "/metadata/labels/stage",
                                                    "value": "live"}])
    core.patch_namespaced_config_map("mover", ns, [{"op": "replace", "path": "/metadata/labels/stage",
                                                    "value": "retired"}])
    seen = []
    stream = watch.Watch()
    for event in stream.stream(core.list_namespaced_config_map, ns, label_selector="stage=live",
                               resource_version=start, timeout_seconds=WATCH_SECONDS):
        seen.append(event["type"])
        if event["type"] == "DELETED":
            stream.stop()
    assert seen == ["ADDED", "DELETED"]


def test_watch_of_deployments_in_all_namespaces(apps: client.AppsV1Api, ns: str) -> None:
    start = apps.list_deployment_for_all_namespaces().metadata.resource_version
    apps.create_namespaced_deployment(ns, deployment("everywhere"))
    seen = []
    stream = watch.Watch()
    for event in stream.stream(apps.list_deployment_for_all_namespaces, resource_version=start,
                               field_selector=f"metadata.namespace={ns}", timeout_seconds=WATCH_SECONDS):
        seen.append((event["type"], type(event["object"]).__name__, event["object"].metadata.name))
        stream.stop()
    assert seen == [("ADDED", "V1Deployment", "everywhere")]


# patches: the content type the client picks, and what each type does ----------------------------------------


@pytest.fixture()
def sent_content_types(api_client: client.ApiClient, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Content-Type of every PATCH the client sends while the test runs."""
    seen: list[str] = []
    pool = api_client.rest_client.pool_manager
    original = pool.request

    def recording(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        if method == "PATCH":
            seen.append((kwargs.get("headers") or {}).get("Content-Type", ""))
        return original(method, url, *args, **kwargs)

    monkeypatch.setattr(pool, "request", recording)
    return seen


def two_container_deployment(name: str) -> client.V1Deployment:
    body = deployment(name)
    body.spec.template.spec.containers.append(client.V1Container(name="sidecar", image="busybox:1.36"))
    return body


def test_configmap_patch_with_a_dict_is_sent_as_a_strategic_merge_patch(core: client.CoreV1Api, ns: str,
                                                                         sent_content_types: list[str]) -> None:
    core.create_namespaced_config_map(ns, configmap("dict", a="1", b="2"))
    patched = core.patch_namespaced_config_map("dict", ns, {"data": {"a": "10", "b": None, "c": "3"}})
    assert sent_content_types == ["application/strategic-merge-patch+json"]
    assert patched.data == {"a": "10", "c": "3"}
    assert core.read_namespaced_config_map("dict", ns).data == {"a": "10", "c": "3"}


def test_configmap_merge_patch_when_the_content_type_is_chosen(core: client.CoreV1Api, ns: str,
                                                               sent_content_types: list[str]) -> None:
    core.create_namespaced_config_map(ns, configmap("merged", {"stage": "beta", "team": "a"}, a="1"))
    patched = core.patch_namespaced_config_map(
        "merged", ns, {"metadata": {"labels": {"stage": None, "owner": "me"}}, "data": {"b": "2"}},
        _content_type="application/merge-patch+json")
    assert sent_content_types == ["application/merge-patch+json"]
    assert patched.metadata.labels == {"team": "a", "owner": "me"}
    assert patched.data == {"a": "1", "b": "2"}


def test_deployment_strategic_merge_patch_changes_one_container_by_name(apps: client.AppsV1Api, ns: str,
                                                                        sent_content_types: list[str]) -> None:
    apps.create_namespaced_deployment(ns, two_container_deployment("smp"))
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox:1.37"}]}}}}
    patched = apps.patch_namespaced_deployment("smp", ns, patch)
    assert sent_content_types == ["application/strategic-merge-patch+json"]
    images = [(c.name, c.image) for c in patched.spec.template.spec.containers]
    assert images == [("app", "nginx:1.27"), ("sidecar", "busybox:1.37")]
    assert patched.metadata.generation == 2
    live = apps.read_namespaced_deployment("smp", ns)
    assert [(c.name, c.image) for c in live.spec.template.spec.containers] == images


def test_deployment_merge_patch_replaces_the_whole_container_list(apps: client.AppsV1Api, ns: str) -> None:
    apps.create_namespaced_deployment(ns, two_container_deployment("mp"))
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox:1.37"}]}}}}
    patched = apps.patch_namespaced_deployment("mp", ns, patch, _content_type="application/merge-patch+json")
    assert [(c.name, c.image) for c in patched.spec.template.spec.containers] == [("sidecar", "busybox:1.37")]


def test_deployment_json_patch_list_is_sent_as_a_json_patch(apps: client.AppsV1Api, ns: str,
                                                            sent_content_types: list[str]) -> None:
    apps.create_namespaced_deployment(ns, two_container_deployment("jp"))
    patched = apps.patch_namespaced_deployment("jp", ns, [
        {"op": "test", "path": "/spec/template/spec/containers/1/name", "value": "sidecar"},
        {"op": "replace", "path": "/spec/template/spec/containers/1/image", "value": "busybox:1.37"},
        {"op": "replace", "path": "/spec/replicas", "value": 3}])
    assert sent_content_types == ["application/json-patch+json"]
    assert patched.spec.replicas == 3 and patched.spec.template.spec.containers[1].image == "busybox:1.37"


def test_deployment_json_patch_with_a_failing_test_is_422_and_changes_nothing(apps: client.AppsV1Api,
                                                                              ns: str) -> None:
    apps.create_namespaced_deployment(ns, two_container_deployment("guard"))
    before = settled_deployment(apps, "guard", ns)
    with pytest.raises(ApiException) as raised:
        apps.patch_namespaced_deployment("guard", ns, [
            {"op": "test", "path": "/spec/replicas", "value": 5},
            {"op": "replace", "path": "/spec/replicas", "value": 0}])
    assert raised.value.status == 422
    after = apps.read_namespaced_deployment("guard", ns)
    assert after.metadata.resource_version == before.metadata.resource_version and after.spec.replicas == 1
