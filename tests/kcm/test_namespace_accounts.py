"""The per-namespace controllers with fakes: the default ServiceAccount, the root CA ConfigMap, a quota's usage,
and the namespace controller's conditions."""

from __future__ import annotations

from collections import Counter
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.kcm.context import ControllerSettings
from minikube_py.kcm.controllers.namespace import Progress, _conditions
from minikube_py.kcm.controllers.resourcequota import ResourceQuotaController
from minikube_py.kcm.controllers.rootcacertpublisher import (
    DESCRIPTION,
    DESCRIPTION_ANNOTATION,
    RootCACertPublisher,
)
from minikube_py.kcm.controllers.serviceaccount import ServiceAccountsController
from tests.kcm.fakes import cache, context

CA = "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n"


def namespace(name: str, phase: str = "Active") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"ns-{name}", "resourceVersion": "1"}
    if phase == "Terminating":
        meta["deletionTimestamp"] = "2026-11-22T10:00:00Z"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta, "status": {"phase": phase}}


# serviceaccount ---------------------------------------------------------------------------------------------


async def test_a_namespace_without_default_account_gets_one() -> None:
    ctx, client, _ = context()
    controller = ServiceAccountsController(ctx)
    cache(ctx, resources.NAMESPACES, namespace("a"), namespace("b"))
    cache(ctx, resources.SERVICE_ACCOUNTS, {"metadata": {"name": "default", "namespace": "b"}})
    await controller.sync("a")
    await controller.sync("b")
    [write] = client.writes()
    assert (write.verb, write.resource, write.namespace, write.body["metadata"]["name"]) == \
        ("create", "serviceaccounts", "a", "default")


async def test_terminating_or_missing_namespaces_and_lost_races_write_nothing() -> None:
    ctx, client, _ = context()
    controller = ServiceAccountsController(ctx)
    cache(ctx, resources.NAMESPACES, namespace("going", "Terminating"), namespace("raced"))
    cache(ctx, resources.SERVICE_ACCOUNTS)
    await controller.sync("going")
    await controller.sync("gone")
    assert client.writes() == []
    client.failures[("create", "serviceaccounts")] = errors.AlreadyExists({"code": 409, "reason": "AlreadyExists",
                                                                             "message": "serviceaccounts \"default\" already exists"})
    await controller.sync("raced")  # the cache lagged: no error, no retry
    assert len(client.writes()) == 1


def test_deleting_the_default_account_enqueues_its_namespace() -> None:
    ctx, _, _ = context()
    controller = ServiceAccountsController(ctx)
    controller._account_deleted({"metadata": {"name": "builder", "namespace": "a"}})
    assert len(controller.queue) == 0
    controller._account_deleted({"metadata": {"name": "default", "namespace": "a"}})
    assert len(controller.queue) == 1


# root-ca-cert-publisher -------------------------------------------------------------------------------------


async def test_root_ca_configmap_is_created_reset_and_left_alone() -> None:
    ctx, client, _ = context(ControllerSettings(root_ca=CA))
    publisher = RootCACertPublisher(ctx)
    right = {"metadata": {"name": "kube-root-ca.crt", "namespace": "ok", "annotations":
                          {DESCRIPTION_ANNOTATION: DESCRIPTION}}, "data": {"ca.crt": CA}}
    edited = {"metadata": {"name": "kube-root-ca.crt", "namespace": "edited", "resourceVersion": "7"},
              "data": {"ca.crt": "forged", "extra": "x"}}
    cache(ctx, resources.NAMESPACES, namespace("new"), namespace("ok"), namespace("edited"),
          namespace("going", "Terminating"))
    cache(ctx, resources.CONFIGMAPS, right, edited)
    for name in ("new", "ok", "edited", "going"):
        await publisher.sync(name)
    created, updated = client.writes()
    assert (created.verb, created.namespace, created.body["data"]) == ("create", "new", {"ca.crt": CA})
    assert created.body["metadata"]["annotations"] == {DESCRIPTION_ANNOTATION: DESCRIPTION}
    assert (updated.verb, updated.namespace, updated.body["data"]) == ("update", "edited", {"ca.crt": CA})
    assert updated.body["metadata"]["resourceVersion"] == "7"  # a conflict-checked write


async def test_without_a_root_ca_nothing_is_published() -> None:
    ctx, client, _ = context()
    publisher = RootCACertPublisher(ctx)
    cache(ctx, resources.NAMESPACES, namespace("a"))
    cache(ctx, resources.CONFIGMAPS)
    await publisher.sync("a")
    assert client.writes() == []


# resourcequota ----------------------------------------------------------------------------------------------


def quota(hard: dict[str, str], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "q", "namespace": "ns", "resourceVersion": "3"},
            "spec": {"hard": hard}, **({"status": status} if status is not None else {})}


def pod(name: str, cpu: str, phase: str = "Running") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": phase}}


async def test_quota_usage_is_recounted_from_the_caches() -> None:
    ctx, client, _ = context()
    controller = ResourceQuotaController(ctx)
    charged_too_much = {"hard": {"pods": "5", "requests.cpu": "2"}, "used": {"pods": "4", "requests.cpu": "1500m"}}
    cache(ctx, resources.RESOURCE_QUOTAS, quota({"pods": "5", "requests.cpu": "2"}, charged_too_much))
    cache(ctx, resources.PODS, pod("a", "250m"), pod("b", "500m"), pod("done", "1", "Succeeded"),
          {**pod("elsewhere", "1"), "metadata": {"name": "elsewhere", "namespace": "other"}})
    await controller.sync("ns/q")
    [write] = client.writes()
    assert (write.verb, write.resource) == ("update", "resourcequotas/status")
    assert write.body["status"] == {"hard": {"pods": "5", "requests.cpu": "2"},
                                    "used": {"pods": "2", "requests.cpu": "750m"}}
    assert write.body["metadata"]["resourceVersion"] == "3"


async def test_a_quota_already_right_is_not_written() -> None:
    ctx, client, _ = context()
    controller = ResourceQuotaController(ctx)
    cache(ctx, resources.RESOURCE_QUOTAS, quota({"pods": "5"}, {"hard": {"pods": "5"}, "used": {"pods": "1"}}))
    cache(ctx, resources.PODS, pod("a", "1"))
    await controller.sync("ns/q")
    assert client.writes() == []


def test_replenishment_triggers() -> None:
    ctx, _, _ = context()
    controller = ResourceQuotaController(ctx)
    cache(ctx, resources.RESOURCE_QUOTAS, quota({"pods": "5"}))
    running, finished = pod("a", "1"), pod("a", "1", "Succeeded")
    controller._tracked_changed("", "pods", running, running)  # an ordinary update: admission's business
    assert len(controller.queue) == 0
    controller._tracked_changed("", "pods", running, finished)
    assert len(controller.queue) == 1
    controller._replenish("", "services", {"metadata": {"name": "s", "namespace": "ns"}})  # not counted by q
    controller._replenish("", "pods", {"metadata": {"name": "x", "namespace": "other"}})  # no quota there
    assert len(controller.queue) == 1
    # a status change (admission's charge) does not trigger a recount; a spec change does
    charged = quota({"pods": "5"}, {"hard": {"pods": "5"}, "used": {"pods": "2"}})
    controller.queue = type(controller.queue)()
    controller._quota_updated(quota({"pods": "5"}, {"hard": {"pods": "5"}, "used": {"pods": "1"}}), charged)
    assert len(controller.queue) == 0
    controller._quota_updated(charged, quota({"pods": "6"}, charged["status"]))
    assert len(controller.queue) == 1


# namespace conditions ---------------------------------------------------------------------------------------


def test_namespace_conditions_report_what_remains() -> None:
    progress = Progress(remaining=Counter({"pods.": 2, "widgets.example.com": 1}),
                        finalizers=Counter({"example.com/keep": 1}))
    conditions = {kind: (true, reason, message) for kind, true, reason, message in _conditions(progress)}
    assert conditions["NamespaceContentRemaining"] == (
        True, "SomeResourcesRemain",
        "Some resources are remaining: pods. has 2 resource instances, widgets.example.com has 1 resource instances")
    assert conditions["NamespaceFinalizersRemaining"] == (
        True, "SomeFinalizersRemain",
        "Some content in the namespace has finalizers remaining: example.com/keep in 1 resource instances")
    assert conditions["NamespaceDeletionDiscoveryFailure"][:2] == (False, "ResourcesDiscovered")
    assert not progress.done
    assert Progress().done
    failed = {kind: (true, reason) for kind, true, reason, _ in _conditions(
        Progress(discovery_failures={"metrics.k8s.io/v1beta1": "503"}))}
    assert failed["NamespaceDeletionDiscoveryFailure"] == (True, "DiscoveryFailed")
