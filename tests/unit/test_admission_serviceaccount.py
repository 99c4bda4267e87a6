"""ServiceAccount admission: the default account, the lookup, the projected token volume, mirror pods and
mountable secrets."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from minikube_py.admission.interface import CREATE
from minikube_py.admission.plugins.serviceaccount import TOKEN_MOUNT_PATH, ServiceAccount, token_volume
from minikube_py.api.errors import APIError
from tests.unit.test_admission_namespacelifecycle import FakeState, attributes


def account(name: str = "default", **fields: Any) -> tuple[str, str, dict[str, Any]]:
    meta = {"name": name, "namespace": "ns", **fields.pop("metadata", {})}
    return "", "serviceaccounts", {"metadata": meta, **fields}


def pod(**spec: Any) -> dict[str, Any]:
    annotations = spec.pop("annotations", None)
    meta: dict[str, Any] = {"name": "web", **({"annotations": annotations} if annotations else {})}
    return {"metadata": meta, "spec": {"containers": [{"name": "app", "image": "nginx"}], **spec}}


def plugin(*accounts: tuple[str, str, dict[str, Any]]) -> ServiceAccount:
    return ServiceAccount(FakeState(*accounts), default_wait=0, missing_wait=0)


async def admitted(sa: ServiceAccount, obj: dict[str, Any]) -> dict[str, Any]:
    attrs = attributes(CREATE, "pods", obj)
    await sa.admit(attrs)
    await sa.validate(attrs)
    return obj


async def test_a_pod_without_an_account_runs_as_default_with_the_token_mounted() -> None:
    obj = await admitted(plugin(account()), pod(initContainers=[{"name": "init", "image": "busybox"}]))
    spec = obj["spec"]
    assert spec["serviceAccountName"] == "default"
    [volume] = spec["volumes"]
    assert volume == token_volume(volume["name"])
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == 21
    for container in spec["containers"] + spec["initContainers"]:
        assert container["volumeMounts"] == [{"name": volume["name"], "readOnly": True,
                                              "mountPath": TOKEN_MOUNT_PATH}]


async def test_the_volume_is_kubes_projection() -> None:
    sources = token_volume("kube-api-access-abcde")["projected"]["sources"]
    assert sources[0] == {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    assert sources[1] == {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}
    assert sources[2]["downwardAPI"]["items"] == [
        {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]


@pytest.mark.parametrize("pod_choice, account_choice, mounted", [
    (None, None, True), (False, None, False), (None, False, False), (True, False, True), (False, True, False)])
async def test_the_pods_automount_choice_wins_over_the_accounts(pod_choice: bool | None,
                                                                account_choice: bool | None, mounted: bool) -> None:
    fields = {} if account_choice is None else {"automountServiceAccountToken": account_choice}
    spec = {} if pod_choice is None else {"automountServiceAccountToken": pod_choice}
    obj = await admitted(plugin(account(**fields)), pod(**spec))
    assert ("volumes" in obj["spec"]) is mounted


async def test_a_container_mounting_the_standard_path_itself_keeps_its_mount() -> None:
    own = {"name": "mine", "mountPath": TOKEN_MOUNT_PATH}
    containers = [{"name": "a", "image": "x", "volumeMounts": [own]}]
    obj = await admitted(plugin(account()), pod(containers=containers, volumes=[{"name": "mine", "emptyDir": {}}]))
    assert obj["spec"]["containers"][0]["volumeMounts"] == [own]
    assert [v["name"] for v in obj["spec"]["volumes"]] == ["mine"]


async def test_a_missing_account_is_forbidden_in_kubes_words() -> None:
    with pytest.raises(APIError) as err:
        await plugin().admit(attributes(CREATE, "pods", pod(serviceAccountName="robot")))
    assert err.value.code == 403
    assert err.value.message == ('pods "web" is forbidden: error looking up service account ns/robot: '
                                 'serviceaccount "robot" not found')


async def test_an_account_the_cache_does_not_hold_yet_is_waited_for() -> None:
    # the account was created just before the pod, and the watch cache has not caught up with it yet
    state = FakeState()
    sa = ServiceAccount(state, default_wait=0, missing_wait=5.0)
    asyncio.get_running_loop().call_later(0.1, state.add, *account("robot"))
    obj = await admitted(sa, pod(serviceAccountName="robot"))
    assert obj["spec"]["serviceAccountName"] == "robot"


async def test_image_pull_secrets_come_from_the_account() -> None:
    obj = await admitted(plugin(account(imagePullSecrets=[{"name": "registry"}])), pod())
    assert obj["spec"]["imagePullSecrets"] == [{"name": "registry"}]


async def test_mirror_pods_are_left_alone_but_may_not_use_accounts() -> None:
    mirror = {"kubernetes.io/config.mirror": "hash"}
    obj = await admitted(plugin(), pod(annotations=mirror))
    assert "serviceAccountName" not in obj["spec"] and "volumes" not in obj["spec"]
    with pytest.raises(APIError) as err:
        await admitted(plugin(), pod(annotations=mirror, serviceAccountName="default"))
    assert err.value.message.endswith("a mirror pod may not reference service accounts")
    with pytest.raises(APIError) as err:
        await admitted(plugin(), pod(annotations=mirror, volumes=[{"name": "s", "secret": {"secretName": "x"}}]))
    assert err.value.message.endswith("a mirror pod may not reference secrets")


async def test_an_account_enforcing_mountable_secrets_refuses_others() -> None:
    strict = account(metadata={"annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}},
                     secrets=[{"name": "ok"}])
    await admitted(plugin(strict), pod(volumes=[{"name": "s", "secret": {"secretName": "ok"}}]))
    with pytest.raises(APIError) as err:
        await admitted(plugin(strict), pod(volumes=[{"name": "s", "secret": {"secretName": "other"}}]))
    assert err.value.message == ('pods "web" is forbidden: volume with secret.secretName="other" is not allowed '
                                 "because service account default does not reference that secret")


async def test_other_resources_and_subresources_are_ignored() -> None:
    sa = plugin()
    await sa.admit(attributes(CREATE, "configmaps", {"metadata": {"name": "c"}}))
    await sa.admit(attributes(CREATE, "pods", {"kind": "Binding"}, subresource="binding"))


async def test_the_deprecated_service_account_field_still_names_the_account() -> None:
    obj = await admitted(plugin(account("robot")), pod(serviceAccount="robot"))
    assert obj["spec"]["serviceAccountName"] == "robot"
