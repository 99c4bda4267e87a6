"""LimitRanger: defaults from `type: Container` limits (and the annotation saying so), and min/max/ratio
checks for containers, pods and claims, in kube's words."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.admission.interface import CREATE, UPDATE
from minikube_py.admission.plugins.limitranger import LimitRanger
from minikube_py.api.errors import APIError
from tests.unit.test_admission_namespacelifecycle import FakeState, attributes


def limits(*items: dict[str, Any]) -> LimitRanger:
    lr = {"metadata": {"name": "lr", "namespace": "ns"}, "spec": {"limits": list(items)}}
    return LimitRanger(FakeState(("", "limitranges", lr)))


def pod(*resources: dict[str, Any], init: dict[str, Any] | None = None) -> dict[str, Any]:
    containers = [{"name": f"c{i}", "image": "x", "resources": r} for i, r in enumerate(resources)]
    spec: dict[str, Any] = {"containers": containers}
    if init is not None:
        spec["initContainers"] = [{"name": "init", "image": "x", "resources": init}]
    return {"metadata": {"name": "web"}, "spec": spec}


async def refusal(plugin: LimitRanger, obj: dict[str, Any], resource: str = "pods") -> str:
    with pytest.raises(APIError) as err:
        await plugin.validate(attributes(CREATE, resource, obj))
    assert err.value.code == 403
    return err.value.message


async def test_defaults_fill_what_each_container_leaves_out_and_are_recorded() -> None:
    plugin = limits({"type": "Container", "default": {"cpu": "1", "memory": "256Mi"},
                     "defaultRequest": {"cpu": "100m", "memory": "128Mi"}})
    obj = pod({"requests": {"cpu": "200m"}}, init={})
    await plugin.admit(attributes(CREATE, "pods", obj))
    first, init = obj["spec"]["containers"][0], obj["spec"]["initContainers"][0]
    assert first["resources"] == {"requests": {"cpu": "200m", "memory": "128Mi"},
                                  "limits": {"cpu": "1", "memory": "256Mi"}}
    assert init["resources"]["requests"] == {"cpu": "100m", "memory": "128Mi"}
    assert obj["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: memory request for container c0; cpu, memory limit for container c0; "
        "cpu, memory request for init container init; cpu, memory limit for init container init")


async def test_nothing_to_default_leaves_the_pod_unannotated() -> None:
    obj = pod({"requests": {"cpu": "1"}})
    await limits({"type": "Pod", "max": {"cpu": "2"}}).admit(attributes(CREATE, "pods", obj))
    assert "annotations" not in obj["metadata"]


@pytest.mark.parametrize("item, resources, message", [
    ({"max": {"cpu": "500m"}}, {"limits": {"cpu": "1"}}, "maximum cpu usage per Container is 500m, but limit is 1"),
    ({"max": {"cpu": "500m"}}, {}, "maximum cpu usage per Container is 500m.  No limit is specified"),
    ({"min": {"memory": "64Mi"}}, {"requests": {"memory": "32Mi"}},
     "minimum memory usage per Container is 64Mi, but request is 32Mi"),
    ({"min": {"memory": "64Mi"}}, {}, "minimum memory usage per Container is 64Mi.  No request is specified"),
    ({"maxLimitRequestRatio": {"cpu": "2"}}, {"requests": {"cpu": "100m"}, "limits": {"cpu": "300m"}},
     "cpu max limit to request ratio per Container is 2, but provided ratio is 3.000000"),
    ({"maxLimitRequestRatio": {"cpu": "2"}}, {"limits": {"cpu": "300m"}},
     "cpu max limit to request ratio per Container is 2, but no request is specified or request is 0"),
])
async def test_container_bounds(item: dict[str, Any], resources: dict[str, Any], message: str) -> None:
    assert await refusal(limits({"type": "Container", **item}), pod(resources)) == f'pods "web" is forbidden: {message}'


async def test_containers_within_bounds_pass() -> None:
    plugin = limits({"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "1"}})
    await plugin.validate(attributes(CREATE, "pods", pod({"requests": {"cpu": "100m"}, "limits": {"cpu": "1"}})))


async def test_pod_bounds_apply_to_the_sum_of_the_containers() -> None:
    plugin = limits({"type": "Pod", "max": {"cpu": "1"}})
    message = await refusal(plugin, pod({"limits": {"cpu": "600m"}}, {"limits": {"cpu": "600m"}}))
    assert message == 'pods "web" is forbidden: maximum cpu usage per Pod is 1, but limit is 1200m'


async def test_several_violations_are_listed_together() -> None:
    plugin = limits({"type": "Container", "max": {"cpu": "500m"}})
    message = await refusal(plugin, pod({"limits": {"cpu": "1"}}, {"limits": {"cpu": "2"}}))
    assert message == ('pods "web" is forbidden: [maximum cpu usage per Container is 500m, but limit is 1, '
                       "maximum cpu usage per Container is 500m, but limit is 2]")


async def test_claims_are_bounded_by_their_storage_request() -> None:
    plugin = limits({"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}})
    claim = {"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "20Gi"}}}}
    assert await refusal(plugin, claim, "persistentvolumeclaims") == (
        'persistentvolumeclaims "data" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, '
        "but request is 20Gi")


async def test_pod_updates_are_not_checked() -> None:
    plugin = limits({"type": "Container", "max": {"cpu": "500m"}})
    await plugin.validate(attributes(UPDATE, "pods", pod({"limits": {"cpu": "1"}}), name="web"))
