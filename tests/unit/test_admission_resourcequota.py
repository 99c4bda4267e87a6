"""ResourceQuota: what objects use, scopes, the charge written to status, and kube's refusals."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from minikube_py.admission.interface import CREATE
from minikube_py.admission.plugins.resourcequota import ResourceQuota
from minikube_py.api.errors import APIError
from minikube_py.api.quota import quota_status, usage
from tests.unit.test_admission_namespacelifecycle import FakeState, attributes


def quota(hard: dict[str, str], *, used: dict[str, str] | None = None, name: str = "q", **spec: Any) -> Any:
    obj: dict[str, Any] = {"metadata": {"name": name, "namespace": "ns"}, "spec": {"hard": hard, **spec}}
    if used is not None:
        obj["status"] = {"hard": hard, "used": used}
    return "", "resourcequotas", obj


def pod(name: str = "web", *, phase: str = "Pending", **resources: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}, "status": {"phase": phase},
            "spec": {"containers": [{"name": "nginx", "image": "x", "resources": resources}]}}


async def create(state: FakeState, obj: dict[str, Any], resource: str = "pods", dry_run: bool = False) -> None:
    await ResourceQuota(state).validate(attributes(CREATE, resource, obj, dry_run=dry_run))


def test_a_pods_usage() -> None:
    used = usage("", "pods", pod(requests={"cpu": "250m", "memory": "64Mi"}, limits={"cpu": "1"}))
    assert used == {"count/pods": 1, "pods": 1, "cpu": Fraction(1, 4), "requests.cpu": Fraction(1, 4),
                    "memory": 64 * 2**20, "requests.memory": 64 * 2**20, "limits.cpu": 1}


def test_a_finished_pod_only_counts_as_an_object() -> None:
    assert usage("", "pods", pod(phase="Succeeded", requests={"cpu": "1"})) == {"count/pods": 1}


def test_services_and_claims_usage() -> None:
    service = {"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 443}]}}
    assert usage("", "services", service) == {"count/services": 1, "services": 1, "services.loadbalancers": 0,
                                              "services.nodeports": 2}
    claim = {"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}}}
    assert usage("", "persistentvolumeclaims", claim) == {
        "count/persistentvolumeclaims": 1, "persistentvolumeclaims": 1, "requests.storage": 2**30,
        "fast.storageclass.storage.k8s.io/persistentvolumeclaims": 1,
        "fast.storageclass.storage.k8s.io/requests.storage": 2**30}
    assert usage("apps", "deployments", {}) == {"count/deployments.apps": 1}


async def test_a_create_within_quota_is_charged_to_its_status() -> None:
    state = FakeState(quota({"pods": "2", "requests.memory": "1Gi"}, used={"pods": "1", "requests.memory": "0"}))
    await create(state, pod(requests={"memory": "128Mi"}))
    assert state.objects[("", "resourcequotas", "ns", "q")]["status"]["used"] == {"pods": "2",
                                                                                 "requests.memory": "128Mi"}
    assert state.updates == [(("", "resourcequotas", "ns", "q"), "status")]


async def test_a_create_over_quota_is_refused_in_kubes_words() -> None:
    state = FakeState(quota({"pods": "2"}, used={"pods": "2"}))
    with pytest.raises(APIError) as err:
        await create(state, pod("c"))
    assert err.value.code == 403
    assert err.value.message == ('pods "c" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, '
                                 "limited: pods=2")
    assert state.updates == []


async def test_a_dry_run_is_checked_but_not_charged() -> None:
    state = FakeState(quota({"pods": "2"}, used={"pods": "1"}))
    await create(state, pod(), dry_run=True)
    assert state.updates == [] and state.objects[("", "resourcequotas", "ns", "q")]["status"]["used"] == {"pods": "1"}
    with pytest.raises(APIError):
        await create(FakeState(quota({"pods": "1"}, used={"pods": "1"})), pod(), dry_run=True)


async def test_a_compute_quota_requires_requests_and_limits() -> None:
    state = FakeState(quota({"requests.cpu": "1", "limits.cpu": "1", "memory": "1Gi"}, used={}))
    with pytest.raises(APIError) as err:
        await create(state, pod(requests={"memory": "1Mi"}))
    assert err.value.message == ('pods "web" is forbidden: failed quota: q: must specify limits.cpu for: nginx; '
                                 "requests.cpu for: nginx")


async def test_a_quota_without_status_yet_is_computed_from_the_cache() -> None:
    state = FakeState(quota({"count/configmaps": "1"}), ("", "configmaps", {"metadata": {"name": "old",
                                                                                      "namespace": "ns"}}))
    with pytest.raises(APIError) as err:
        await create(state, {"metadata": {"name": "new"}}, "configmaps")
    assert err.value.message.endswith("requested: count/configmaps=1, used: count/configmaps=1, "
                                      "limited: count/configmaps=1")


async def test_scoped_quotas_count_only_the_pods_they_select() -> None:
    state = FakeState(quota({"pods": "0"}, used={"pods": "0"}, scopes=["BestEffort"]),
                      quota({"pods": "0"}, used={"pods": "0"}, name="vip", scopeSelector={"matchExpressions": [
                          {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}))
    await create(state, pod(requests={"cpu": "1"}))  # neither best effort nor high priority
    with pytest.raises(APIError):
        await create(state, pod())
    await create(state, {"metadata": {"name": "cm"}}, "configmaps")  # scoped quotas count only pods


def test_quota_status_sums_the_namespaces_objects() -> None:
    q = quota({"pods": "10", "requests.cpu": "4", "limits.memory": "1Gi"})
    state = FakeState(q, ("", "pods", pod("a", requests={"cpu": "500m"})),
                      ("", "pods", pod("b", requests={"cpu": "1"}, limits={"memory": "256Mi"})),
                      ("", "pods", pod("done", phase="Failed", requests={"cpu": "1"})))
    assert quota_status(state, q[2]) == {"hard": {"pods": "10", "requests.cpu": "4", "limits.memory": "1Gi"},
                                         "used": {"limits.memory": "256Mi", "pods": "2", "requests.cpu": "1500m"}}


def test_init_containers_count_at_their_peak_and_sidecars_all_along() -> None:
    obj = pod(requests={"cpu": "1"})
    obj["spec"]["initContainers"] = [
        {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
        {"name": "setup", "resources": {"requests": {"cpu": "3"}}}]
    assert usage("", "pods", obj)["requests.cpu"] == Fraction(7, 2)  # max(1 + 0.5, 0.5 + 3)
