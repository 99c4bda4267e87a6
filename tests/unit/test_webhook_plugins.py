"""The webhook admission plugins against a fake cluster state and a scripted webhook client: matching,
the AdmissionReview sent, patches, refusals, failure policies, dry run, ordering and reinvocation."""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from minikube_py.admission.interface import CREATE, DELETE, UPDATE, Attributes
from minikube_py.admission.plugins.webhook import MutatingWebhookPlugin, ValidatingWebhookPlugin
from minikube_py.admission.plugins.webhook.config import GROUP, MUTATING, VALIDATING
from minikube_py.admission.plugins.webhook.review import CallingWebhookError
from minikube_py.api.errors import APIError
from minikube_py.auth.authn import UserInfo

Answer = Callable[[dict[str, Any]], Any]


class FakeState:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}

    def add(self, group: str, resource: str, obj: dict[str, Any], namespace: str = "") -> None:
        self.objects[(group, resource, namespace, obj["metadata"]["name"])] = obj

    def get(self, group: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((group, resource, namespace, name))

    def list(self, group: str, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        return [o for (g, r, ns, _), o in self.objects.items() if (g, r) == (group, resource)
                and (not namespace or ns == namespace)]

    async def update(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError


class FakeClient:
    """Answers each webhook (by name) with a scripted function of the review it was sent."""

    def __init__(self, answers: dict[str, Answer]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def post(self, webhook: Any, review: dict[str, Any]) -> Any:
        self.calls.append((webhook.name, copy.deepcopy(review)))
        return self.answers[webhook.name](review)


def allow(review: dict[str, Any], **response: Any) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": True, **response}}


def deny(message: str, code: int | None = None) -> Answer:
    def answer(review: dict[str, Any]) -> dict[str, Any]:
        status: dict[str, Any] = {"message": message}
        if code is not None:
            status["code"] = code
        return allow(review, allowed=False, status=status)
    return answer


def patching(*ops: dict[str, Any]) -> Answer:
    def answer(review: dict[str, Any]) -> dict[str, Any]:
        patch = base64.b64encode(orjson.dumps(list(ops))).decode()
        return allow(review, patchType="JSONPatch", patch=patch)
    return answer


def failing(why: str) -> Answer:
    def answer(review: dict[str, Any]) -> Any:
        raise CallingWebhookError(why)
    return answer


RULE = {"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "scope": "*"}


def webhook(name: str, **changes: Any) -> dict[str, Any]:
    hook = {"name": name, "rules": [RULE], "failurePolicy": "Fail", "matchPolicy": "Equivalent",
            "sideEffects": "None", "timeoutSeconds": 10, "admissionReviewVersions": ["v1"],
            "namespaceSelector": {}, "objectSelector": {}, "clientConfig": {"url": "https://hook.example/"}}
    hook.update(changes)
    return hook


def configure(state: FakeState, resource: str, name: str, *hooks: dict[str, Any]) -> None:
    state.add(GROUP, resource, {"metadata": {"name": name, "resourceVersion": "1"}, "webhooks": list(hooks)})


def configmap(labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns",
                                                                   "labels": labels or {}}}


def attributes(operation: str = CREATE, obj: dict[str, Any] | None = None, old: dict[str, Any] | None = None,
               **kw: Any) -> Attributes:
    base: dict[str, Any] = {"group": "", "version": "v1", "resource": "configmaps",
                            "kind": ("", "v1", "ConfigMap"), "namespace": "ns"}
    base.update(kw)
    return Attributes(operation=operation, user=UserInfo("alice", groups=("devs",)), object=obj, old_object=old,
                      **base)


@pytest.fixture()
def state() -> FakeState:
    s = FakeState()
    s.add("", "namespaces", {"metadata": {"name": "ns", "labels": {"team": "a"}}})
    return s


def plugins(state: FakeState, answers: dict[str, Answer]) -> tuple[MutatingWebhookPlugin, ValidatingWebhookPlugin,
                                                                    FakeClient]:
    client = FakeClient(answers)
    return MutatingWebhookPlugin(state, client), ValidatingWebhookPlugin(state, client), client  # type: ignore[arg-type]


async def test_a_mutating_webhook_patches_the_object_in_place(state: FakeState) -> None:
    configure(state, MUTATING, "m", webhook("label.example.com"))
    mutating, _, client = plugins(state, {"label.example.com": patching(
        {"op": "add", "path": "/metadata/labels/mutated", "value": "yes"})})
    obj = configmap()
    attrs = attributes(obj=obj)
    await mutating.admit(attrs)
    assert attrs.object is obj and obj["metadata"]["labels"] == {"mutated": "yes"}
    request = client.calls[0][1]["request"]
    assert request["operation"] == "CREATE" and request["name"] == "cm" and request["namespace"] == "ns"
    assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert request["userInfo"] == {"username": "alice", "groups": ["devs"]}
    assert request["oldObject"] is None and request["dryRun"] is False


async def test_a_denial_carries_the_webhook_s_message_and_code(state: FakeState) -> None:
    configure(state, VALIDATING, "v", webhook("deny.example.com"))
    _, validating, _ = plugins(state, {"deny.example.com": deny("no thanks")})
    with pytest.raises(APIError) as err:
        await validating.validate(attributes(obj=configmap()))
    assert (err.value.code, err.value.message) == (400, 'admission webhook "deny.example.com" denied the request: '
                                                        "no thanks")
    _, validating, _ = plugins(state, {"deny.example.com": deny("", code=403)})
    with pytest.raises(APIError) as err:
        await validating.validate(attributes(obj=configmap()))
    assert (err.value.code, err.value.message) == (403, 'admission webhook "deny.example.com" denied the request '
                                                        "without explanation")


@pytest.mark.parametrize("policy, refused", [("Fail", True), ("Ignore", False)])
async def test_an_unreachable_webhook_is_governed_by_its_failure_policy(state: FakeState, policy: str,
                                                                        refused: bool) -> None:
    configure(state, VALIDATING, "v", webhook("down.example.com", failurePolicy=policy))
    _, validating, _ = plugins(state, {"down.example.com": failing('failed to call webhook: Post "x": boom')})
    if not refused:
        await validating.validate(attributes(obj=configmap()))
        return
    with pytest.raises(APIError) as err:
        await validating.validate(attributes(obj=configmap()))
    assert (err.value.code, err.value.reason) == (500, "InternalError")
    assert err.value.message == ('Internal error occurred: failed calling webhook "down.example.com": failed to '
                                 'call webhook: Post "x": boom')


@pytest.mark.parametrize("answer, why", [
    (lambda review: {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}, "webhook response was absent"),
    (lambda review: {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                     "response": {"uid": "other", "allowed": True}}, 'expected response.uid='),
    (lambda review: {**allow(review), "kind": "Other"}, "expected webhook response of admission.k8s.io/v1, "
                                                        "Kind=AdmissionReview, got admission.k8s.io/v1, Kind=Other"),
    (lambda review: allow(review, patch=base64.b64encode(b"[]").decode()), "validating webhook may not return "
                                                                            "response.patch"),
    ("garbage", "webhook response was absent"),
])
async def test_an_invalid_response_is_a_failure_to_call(state: FakeState, answer: Any, why: str) -> None:
    configure(state, VALIDATING, "v", webhook("odd.example.com"))
    _, validating, _ = plugins(state, {"odd.example.com": answer if callable(answer) else lambda review: answer})
    with pytest.raises(APIError) as err:
        await validating.validate(attributes(obj=configmap()))
    assert err.value.code == 500 and "received invalid webhook response" in err.value.message
    assert why in err.value.message


async def test_a_mutating_webhook_s_bad_patch_type_is_a_failure_to_call(state: FakeState) -> None:
    configure(state, MUTATING, "m", webhook("patch.example.com"))
    bad = lambda review: allow(review, patchType="MergePatch", patch=base64.b64encode(b"{}").decode())  # noqa: E731
    mutating, _, _ = plugins(state, {"patch.example.com": bad})
    with pytest.raises(APIError) as err:
        await mutating.admit(attributes(obj=configmap()))
    assert err.value.message.endswith('failed calling webhook "patch.example.com": unsupported patch type '
                                      '"MergePatch"')


async def test_a_patch_that_does_not_apply_is_an_internal_error_even_when_ignored(state: FakeState) -> None:
    configure(state, MUTATING, "m", webhook("patch.example.com", failurePolicy="Ignore"))
    mutating, _, _ = plugins(state, {"patch.example.com": patching({"op": "remove", "path": "/nope"})})
    with pytest.raises(APIError) as err:
        await mutating.admit(attributes(obj=configmap()))
    assert err.value.code == 500


async def test_rules_select_operation_resource_subresource_and_scope(state: FakeState) -> None:
    rules = [{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["*"], "resources": ["pods/status"],
              "scope": "Namespaced"}]
    configure(state, VALIDATING, "v", webhook("status.example.com", rules=rules))
    _, validating, client = plugins(state, {"status.example.com": allow})
    pod = {"metadata": {"name": "p", "namespace": "ns"}}
    pod_attrs = {"resource": "pods", "kind": ("", "v1", "Pod")}
    await validating.validate(attributes(UPDATE, pod, pod, **pod_attrs))  # no subresource: skipped
    await validating.validate(attributes(CREATE, pod, subresource="status", **pod_attrs))  # CREATE: skipped
    await validating.validate(attributes(UPDATE, pod, pod, subresource="status", namespace="", **pod_attrs))
    assert client.calls == []
    await validating.validate(attributes(UPDATE, pod, pod, subresource="status", **pod_attrs))
    assert len(client.calls) == 1 and client.calls[0][1]["request"]["subResource"] == "status"


async def test_namespace_selector_uses_the_namespace_labels(state: FakeState) -> None:
    configure(state, VALIDATING, "v", webhook("ns.example.com", namespaceSelector={"matchLabels": {"team": "b"}}))
    _, validating, client = plugins(state, {"ns.example.com": deny("no")})
    await validating.validate(attributes(obj=configmap()))  # namespace ns has team=a
    assert client.calls == []
    state.add("", "namespaces", {"metadata": {"name": "ns", "labels": {"team": "b"}}})
    with pytest.raises(APIError):
        await validating.validate(attributes(obj=configmap()))


async def test_namespace_selector_on_a_namespace_uses_its_own_labels(state: FakeState) -> None:
    rules = [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["namespaces"],
              "scope": "Cluster"}]
    configure(state, VALIDATING, "v", webhook("ns.example.com", rules=rules,
                                              namespaceSelector={"matchLabels": {"guarded": "yes"}}))
    _, validating, client = plugins(state, {"ns.example.com": deny("no")})
    ns_attrs = {"resource": "namespaces", "kind": ("", "v1", "Namespace"), "namespace": ""}
    await validating.validate(attributes(obj={"metadata": {"name": "new"}}, **ns_attrs))
    with pytest.raises(APIError):
        await validating.validate(attributes(obj={"metadata": {"name": "new", "labels": {"guarded": "yes"}}},
                                             **ns_attrs))


async def test_namespace_selector_on_a_missing_namespace_is_not_found(state: FakeState) -> None:
    configure(state, VALIDATING, "v", webhook("ns.example.com", namespaceSelector={"matchLabels": {"team": "a"}}))
    _, validating, _ = plugins(state, {"ns.example.com": allow})
    with pytest.raises(APIError) as err:
        await validating.validate(attributes(obj=configmap(), namespace="gone"))
    assert (err.value.code, err.value.message) == (404, 'namespaces "gone" not found')


async def test_object_selector_matches_the_new_or_the_old_object(state: FakeState) -> None:
    configure(state, VALIDATING, "v", webhook("obj.example.com", objectSelector={"matchLabels": {"deny": "yes"}}))
    _, validating, client = plugins(state, {"obj.example.com": deny("labelled")})
    await validating.validate(attributes(obj=configmap()))
    assert client.calls == []
    with pytest.raises(APIError):
        await validating.validate(attributes(UPDATE, configmap(), configmap({"deny": "yes"})))
    with pytest.raises(APIError):
        await validating.validate(attributes(DELETE, None, configmap({"deny": "yes"})))


async def test_webhook_configurations_themselves_are_exempt(state: FakeState) -> None:
    rules = [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "*"}]
    configure(state, VALIDATING, "v", webhook("all.example.com", rules=rules))
    _, validating, client = plugins(state, {"all.example.com": deny("no")})
    await validating.validate(attributes(obj={"metadata": {"name": "v"}}, group=GROUP, resource=VALIDATING,
                                         namespace="", kind=(GROUP, "v1", "ValidatingWebhookConfiguration")))
    assert client.calls == []


async def test_equivalent_match_policy_sends_the_object_at_the_rule_s_version(state: FakeState) -> None:
    rules = [{"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": ["v1"],
              "resources": ["horizontalpodautoscalers"], "scope": "*"}]
    configure(state, VALIDATING, "v", webhook("hpa.example.com", rules=rules),
              webhook("exact.example.com", rules=rules, matchPolicy="Exact"))
    _, validating, client = plugins(state, {"hpa.example.com": allow, "exact.example.com": allow})
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "h", "namespace": "ns"},
           "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d", "apiVersion": "apps/v1"},
                    "minReplicas": 1, "maxReplicas": 3, "metrics": [
                        {"type": "Resource", "resource": {"name": "cpu", "target": {
                            "type": "Utilization", "averageUtilization": 50}}}]}}
    await validating.validate(attributes(obj=hpa, group="autoscaling", version="v2",
                                         resource="horizontalpodautoscalers",
                                         kind=("autoscaling", "v2", "HorizontalPodAutoscaler")))
    assert [name for name, _ in client.calls] == ["hpa.example.com"]
    request = client.calls[0][1]["request"]
    assert request["resource"]["version"] == "v1" and request["requestResource"]["version"] == "v2"
    assert request["kind"] == {"group": "autoscaling", "version": "v1", "kind": "HorizontalPodAutoscaler"}
    assert request["object"]["apiVersion"] == "autoscaling/v1"
    assert request["object"]["spec"]["targetCPUUtilizationPercentage"] == 50


async def test_dry_run_refuses_webhooks_with_side_effects(state: FakeState) -> None:
    configure(state, VALIDATING, "v", webhook("fx.example.com", sideEffects="Some"),
              webhook("safe.example.com", sideEffects="NoneOnDryRun"))
    _, validating, client = plugins(state, {"fx.example.com": allow, "safe.example.com": allow})
    with pytest.raises(APIError) as err:
        await validating.validate(attributes(obj=configmap(), dry_run=True))
    assert (err.value.code, err.value.message) == (400, 'admission webhook "fx.example.com" does not support '
                                                        "dry run")
    assert all(review["request"]["dryRun"] is True for _, review in client.calls)


async def test_mutating_webhooks_run_in_configuration_name_order_and_see_earlier_patches(state: FakeState) -> None:
    configure(state, MUTATING, "b-second", webhook("b.example.com"))
    configure(state, MUTATING, "a-first", webhook("a1.example.com"), webhook("a2.example.com"))
    seen: list[dict[str, str]] = []

    def record(review: dict[str, Any]) -> dict[str, Any]:
        seen.append(dict(review["request"]["object"]["metadata"]["labels"]))
        return allow(review)

    mutating, _, client = plugins(state, {
        "a1.example.com": patching({"op": "add", "path": "/metadata/labels/a1", "value": "1"}),
        "a2.example.com": patching({"op": "add", "path": "/metadata/labels/a2", "value": "2"}),
        "b.example.com": record})
    await mutating.admit(attributes(obj=configmap()))
    assert [name for name, _ in client.calls] == ["a1.example.com", "a2.example.com", "b.example.com"]
    assert seen == [{"a1": "1", "a2": "2"}]


async def test_if_needed_webhooks_are_reinvoked_after_a_later_change(state: FakeState) -> None:
    configure(state, MUTATING, "m", webhook("first.example.com", reinvocationPolicy="IfNeeded"),
              webhook("second.example.com"))
    mutating, _, client = plugins(state, {
        "first.example.com": allow,
        "second.example.com": patching({"op": "add", "path": "/metadata/labels/x", "value": "1"})})
    await mutating.admit(attributes(obj=configmap()))
    assert [name for name, _ in client.calls] == ["first.example.com", "second.example.com", "first.example.com"]


async def test_warnings_and_audit_annotations_reach_the_attributes(state: FakeState) -> None:
    configure(state, VALIDATING, "v", webhook("warn.example.com"))
    answer = lambda review: allow(review, warnings=["careful"], auditAnnotations={"k": "v"})  # noqa: E731
    _, validating, _ = plugins(state, {"warn.example.com": answer})
    attrs = attributes(obj=configmap())
    await validating.validate(attrs)
    assert attrs.warnings == ["careful"] and attrs.audit_annotations == {"warn.example.com/k": "v"}


def test_without_configurations_the_plugins_do_not_handle_requests(state: FakeState) -> None:
    mutating, validating, _ = plugins(state, {})
    assert not mutating.handles(CREATE) and not validating.handles(CREATE)
    configure(state, VALIDATING, "v", webhook("x.example.com"))
    assert validating.handles(CREATE) and not mutating.handles(CREATE)
