"""`pods/eviction` against a real apiserver: deletions a PodDisruptionBudget allows, and the ones it refuses.

The budgets' statuses are written by hand here (no disruption controller runs), as the controller would.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

REFUSED = "Cannot evict pod as it would violate the pod's disruption budget."
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def pods_url(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods"


def pdbs_url(namespace: str) -> str:
    return f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"


def make_pod(api: httpx.Client, namespace: str, name: str, *, phase: str = "Running", ready: bool = True,
             labels: dict[str, str] | None = None) -> dict[str, Any]:
    body = {"metadata": {"name": name, "labels": {"app": "web"} if labels is None else labels},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "busybox"}]}}
    api.post(pods_url(namespace), json=body).raise_for_status()
    status = {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]}
    r = api.patch(f"{pods_url(namespace)}/{name}/status", json={"status": status},
                  headers={"Content-Type": "application/merge-patch+json"})
    r.raise_for_status()
    return r.json()


def make_budget(api: httpx.Client, namespace: str, name: str = "web", *, allowed: int, current: int = 2,
                desired: int = 2, stale: bool = False, policy: str | None = None,
                selector: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"minAvailable": desired, "selector": selector or {"matchLabels": {"app": "web"}}}
    if policy:
        spec["unhealthyPodEvictionPolicy"] = policy
    r = api.post(pdbs_url(namespace), json={"metadata": {"name": name}, "spec": spec})
    r.raise_for_status()
    budget = r.json()
    budget["status"] = {"disruptionsAllowed": allowed, "currentHealthy": current, "desiredHealthy": desired,
                        "expectedPods": current, "observedGeneration": budget["metadata"]["generation"] - stale,
                        "conditions": [{"type": "DisruptionAllowed", "status": "True" if allowed else "False",
                                        "reason": "SufficientPods" if allowed else "InsufficientPods", "message": "",
                                        "observedGeneration": 1, "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
    r = api.put(f"{pdbs_url(namespace)}/{name}/status", json=budget)
    r.raise_for_status()
    return r.json()


def evict(api: httpx.Client, namespace: str, name: str, delete_options: dict[str, Any] | None = None,
          *, headers: dict[str, str] | None = None, query: str = "") -> httpx.Response:
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction",
                            "metadata": {"name": name, "namespace": namespace}}
    if delete_options is not None:
        body["deleteOptions"] = delete_options
    return api.post(f"{pods_url(namespace)}/{name}/eviction{query}", json=body, headers=headers or {})


def get_pod(api: httpx.Client, namespace: str, name: str) -> httpx.Response:
    return api.get(f"{pods_url(namespace)}/{name}")


def assert_evicted(response: httpx.Response) -> None:
    assert response.status_code == 201, response.text
    assert response.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def test_discovery_lists_the_subresource_as_a_policy_v1_eviction(api: httpx.Client) -> None:
    resources = api.get("/api/v1").json()["resources"]
    (entry,) = [r for r in resources if r["name"] == "pods/eviction"]
    assert (entry["group"], entry["version"], entry["kind"], entry["verbs"]) == ("policy", "v1", "Eviction", ["create"])


def test_a_pod_without_a_budget_is_deleted_gracefully_and_marked(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "a")
    assert_evicted(evict(api, namespace, "a"))
    pod = get_pod(api, namespace, "a").json()
    assert pod["metadata"]["deletionTimestamp"] and pod["metadata"]["deletionGracePeriodSeconds"] == 30
    (target,) = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["status"], target["reason"], target["message"]) == ("True", "EvictionByEvictionAPI",
                                                                        "Eviction API: evicting")


def test_the_delete_options_in_the_eviction_are_honoured(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "a")
    assert_evicted(evict(api, namespace, "a", {"gracePeriodSeconds": 0}))
    assert get_pod(api, namespace, "a").status_code == 404
    make_pod(api, namespace, "b")
    r = evict(api, namespace, "b", {"preconditions": {"uid": "not-the-uid"}})
    assert r.status_code == 409, r.text
    assert "deletionTimestamp" not in get_pod(api, namespace, "b").json()["metadata"]


def test_an_eviction_the_budget_allows_spends_it(api: httpx.Client, namespace: str) -> None:
    for name in ("a", "b", "c"):
        make_pod(api, namespace, name)
    make_budget(api, namespace, allowed=1, current=3, desired=2)
    assert_evicted(evict(api, namespace, "a"))
    status = api.get(f"{pdbs_url(namespace)}/web").json()["status"]
    assert status["disruptionsAllowed"] == 0
    assert list(status["disruptedPods"]) == ["a"]
    (allowed,) = status["conditions"]
    assert (allowed["status"], allowed["reason"]) == ("False", "InsufficientPods")
    assert get_pod(api, namespace, "a").json()["metadata"].get("deletionTimestamp")


def test_an_eviction_that_would_break_the_budget_is_refused_with_429(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "a")
    make_budget(api, namespace, allowed=0, current=2, desired=2)
    r = evict(api, namespace, "a")
    assert r.status_code == 429, r.text
    assert r.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 429,
                        "reason": "TooManyRequests", "message": REFUSED,
                        "details": {"causes": [{"reason": "DisruptionBudget",
                                                "message": "The disruption budget web needs 2 healthy pods and has 2 "
                                                           "currently"}]}}
    pod = get_pod(api, namespace, "a").json()
    assert "deletionTimestamp" not in pod["metadata"]
    assert not [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]


def test_a_budget_the_controller_has_not_seen_yet_refuses_with_a_retry_after(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "a")
    make_budget(api, namespace, allowed=1, current=3, stale=True)
    r = evict(api, namespace, "a")
    assert r.status_code == 429, r.text
    assert r.headers["Retry-After"] == "10"
    assert r.json()["details"] == {"retryAfterSeconds": 10, "causes": [
        {"reason": "DisruptionBudget", "message": "The disruption budget web is still being processed by the server."}]}


def test_a_pod_two_budgets_select_cannot_be_evicted(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "a")
    make_budget(api, namespace, "one", allowed=1)
    make_budget(api, namespace, "two", allowed=1, selector={})  # an empty selector selects every pod
    r = evict(api, namespace, "a")
    assert r.status_code == 500, r.text
    assert r.json()["message"] == ("This pod has more than one PodDisruptionBudget, which the eviction subresource "
                                   "does not support.")
    assert "deletionTimestamp" not in get_pod(api, namespace, "a").json()["metadata"]


def test_evicting_a_missing_pod_is_not_found(api: httpx.Client, namespace: str) -> None:
    r = evict(api, namespace, "ghost")
    assert r.status_code == 404
    assert r.json()["message"] == 'pods "ghost" not found'


@pytest.mark.parametrize("phase", ["Succeeded", "Failed", "Pending"])
def test_pods_whose_loss_disrupts_nothing_are_evicted_without_asking(api: httpx.Client, namespace: str,
                                                                     phase: str) -> None:
    make_pod(api, namespace, "a", phase=phase, ready=False)
    make_budget(api, namespace, allowed=0)
    assert_evicted(evict(api, namespace, "a"))
    assert api.get(f"{pdbs_url(namespace)}/web").json()["status"]["disruptionsAllowed"] == 0
    assert "disruptedPods" not in api.get(f"{pdbs_url(namespace)}/web").json()["status"]


def test_a_pod_already_being_deleted_is_evicted_without_asking(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "a")
    api.delete(f"{pods_url(namespace)}/a").raise_for_status()
    make_budget(api, namespace, allowed=0)
    assert_evicted(evict(api, namespace, "a"))


@pytest.mark.parametrize(("policy", "current", "desired", "code"), [
    (None, 2, 2, 201),               # the budget is met: an unready pod may go without spending it
    ("IfHealthyBudget", 1, 2, 429),  # the application is already disrupted
    ("AlwaysAllow", 0, 2, 201),
])
def test_unready_pods_follow_the_unhealthy_pod_eviction_policy(api: httpx.Client, namespace: str, policy: str | None,
                                                               current: int, desired: int, code: int) -> None:
    make_pod(api, namespace, "a", ready=False)
    make_budget(api, namespace, allowed=0, current=current, desired=desired, policy=policy)
    r = evict(api, namespace, "a")
    assert r.status_code == code, r.text
    status = api.get(f"{pdbs_url(namespace)}/web").json()["status"]
    assert "disruptedPods" not in status  # nothing was spent either way


def test_a_dry_run_eviction_changes_nothing(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "a")
    make_budget(api, namespace, allowed=1, current=3)
    assert_evicted(evict(api, namespace, "a", query="?dryRun=All"))
    assert_evicted(evict(api, namespace, "a", {"dryRun": ["All"]}))
    assert "deletionTimestamp" not in get_pod(api, namespace, "a").json()["metadata"]
    assert api.get(f"{pdbs_url(namespace)}/web").json()["status"]["disruptionsAllowed"] == 1


def test_an_eviction_naming_another_pod_is_a_bad_request(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "a")
    r = api.post(f"{pods_url(namespace)}/a/eviction",
                 json={"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "b"}})
    assert r.status_code == 400
    assert r.json()["message"] == "name in URL does not match name in Eviction object"
    r = api.post(f"{pods_url(namespace)}/a/eviction", json={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}})
    assert r.status_code == 400


def test_evicting_takes_create_on_pods_eviction(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "a")
    user = {"Impersonate-User": "drainer"}
    r = evict(api, namespace, "a", headers=user)
    assert r.status_code == 403, r.text
    api.post(f"{RBAC}/namespaces/{namespace}/roles", json={
        "metadata": {"name": "evict"},
        "rules": [{"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}]}).raise_for_status()
    api.post(f"{RBAC}/namespaces/{namespace}/rolebindings", json={
        "metadata": {"name": "evict"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                   "name": "evict"},
        "subjects": [{"kind": "User", "name": "drainer", "apiGroup": "rbac.authorization.k8s.io"}]}).raise_for_status()
    deadline = time.monotonic() + 5
    while (r := evict(api, namespace, "a", headers=user)).status_code == 403 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert_evicted(r)
    assert api.delete(f"{pods_url(namespace)}/a", headers=user).status_code == 403  # evicting is not deleting
