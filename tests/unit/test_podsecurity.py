"""PodSecurity: each Pod Security Standards check, the namespace labels, and the plugin's decisions.

The expected reasons and details are kube 1.32's, word for word (pod-security-admission's policy tests).
The plugin runs here against a fake ClusterState; tests/apiserver/test_podsecurity.py runs it in the apiserver.
"""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.admission import chain
from minikube_py.admission.interface import CREATE, UPDATE, Attributes
from minikube_py.admission.plugins import podsecurity
from minikube_py.admission.plugins.podsecurity import PodSecurity, checks, significant_update
from minikube_py.admission.plugins.podsecurity.checks import Violation
from minikube_py.admission.plugins.podsecurity.levels import LevelVersion, Policy, policy_for
from minikube_py.admission.plugins.podsecurity.policy import evaluate
from minikube_py.api.errors import APIError
from minikube_py.auth.authn import UserInfo

Obj = dict[str, Any]
L = "pod-security.kubernetes.io/"


# builders ----------------------------------------------------------------------------------------

def ctr(name: str = "c", image: str = "nginx", ports: list[int] | None = None, **security: Any) -> Obj:
    """A container; keyword arguments are its securityContext."""
    c: Obj = {"name": name, "image": image}
    if security:
        c["securityContext"] = security
    if ports:
        c["ports"] = [{"containerPort": p, "hostPort": p} for p in ports]
    return c


RESTRICTED_SC = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True,
                 "seccompProfile": {"type": "RuntimeDefault"}}


def good(name: str = "c", image: str = "nginx", **security: Any) -> Obj:
    """A container that meets the restricted level, with `security` laid over it."""
    return ctr(name, image, **{**RESTRICTED_SC, **security})


def spec(*containers: Obj, init: tuple[Obj, ...] = (), ephemeral: tuple[Obj, ...] = (),
         security: Obj | None = None, volumes: list[Obj] | None = None, **fields: Any) -> Obj:
    s: Obj = {"containers": list(containers) or [ctr()], **fields}
    if init:
        s["initContainers"] = list(init)
    if ephemeral:
        s["ephemeralContainers"] = list(ephemeral)
    if security is not None:
        s["securityContext"] = security
    if volumes is not None:
        s["volumes"] = volumes
    return s


def pod(name: str = "p", pod_spec: Obj | None = None, labels: dict[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": "ns"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec or spec()}


def volume(name: str, source: str, body: Obj | None = None) -> Obj:
    return {"name": name, source: body or {}}


SA_TOKEN = {"name": "kube-api-access-x", "projected": {"sources": [
    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}


# the checks --------------------------------------------------------------------------------------

CHECK_CASES = [
    ("a privileged container is named", checks.privileged, {}, spec(ctr("a", privileged=True)),
     Violation("privileged", 'container "a" must not set securityContext.privileged=true')),
    ("privileged init and regular containers are named together, init first", checks.privileged, {},
     spec(ctr("a", privileged=True), init=(ctr("i", privileged=True),)),
     Violation("privileged", 'containers "i", "a" must not set securityContext.privileged=true')),
    ("privileged=false passes", checks.privileged, {}, spec(ctr(privileged=False)), None),
    ("host namespaces are listed in kube's order", checks.host_namespaces, {},
     spec(hostIPC=True, hostNetwork=True), Violation("host namespaces", "hostNetwork=true, hostIPC=true")),
    ("hostNetwork=false passes", checks.host_namespaces, {}, spec(hostNetwork=False), None),
    ("hostPath volumes are named", checks.host_path_volumes, {},
     spec(volumes=[volume("a", "hostPath", {"path": "/"}), volume("e", "emptyDir"), volume("b", "hostPath")]),
     Violation("hostPath volumes", 'volumes "a", "b"')),
    ("one container using two host ports", checks.host_ports, {}, spec(ctr("a", ports=[8080, 80])),
     Violation("hostPort", 'container "a" uses hostPorts 80, 8080')),
    ("two containers using one host port", checks.host_ports, {}, spec(ctr("a", ports=[80]), ctr("b", ports=[80])),
     Violation("hostPort", 'containers "a", "b" use hostPort 80')),
    ("capabilities beyond the default set are named, sorted", checks.capabilities_baseline, {},
     spec(ctr("a", capabilities={"add": ["SYS_TIME", "CHOWN", "NET_ADMIN"]})),
     Violation("non-default capabilities",
               'container "a" must not include "NET_ADMIN", "SYS_TIME" in securityContext.capabilities.add')),
    ("default capabilities pass", checks.capabilities_baseline, {},
     spec(ctr(capabilities={"add": ["CHOWN", "NET_BIND_SERVICE"]})), None),
    ("AppArmor unconfined on the pod, a container and an annotation", checks.app_armor_profile,
     {"annotations": {"container.apparmor.security.beta.kubernetes.io/a": "unconfined"}},
     spec(ctr("a", appArmorProfile={"type": "Unconfined"}), security={"appArmorProfile": {"type": "Unconfined"}}),
     Violation("forbidden AppArmor profiles", 'pod and container "a" and annotation must not set AppArmor profile '
               'type to "Unconfined", "container.apparmor.security.beta.kubernetes.io/a="unconfined""')),
    ("AppArmor RuntimeDefault and localhost annotations pass", checks.app_armor_profile,
     {"annotations": {"container.apparmor.security.beta.kubernetes.io/a": "localhost/mine"}},
     spec(ctr("a", appArmorProfile={"type": "RuntimeDefault"})), None),
    ("an SELinux type and user", checks.se_linux_options, {},
     spec(ctr("a", seLinuxOptions={"user": "root"}), security={"seLinuxOptions": {"type": "spc_t"}}),
     Violation("seLinuxOptions", 'pod and container "a" set forbidden securityContext.seLinuxOptions: '
               'type "spc_t"; user may not be set')),
    ("SELinux container_engine_t passes (1.31+)", checks.se_linux_options, {},
     spec(security={"seLinuxOptions": {"type": "container_engine_t", "level": "s0:c1"}}), None),
    ("an unmasked proc mount", checks.proc_mount, {}, spec(ctr("a", procMount="Unmasked")),
     Violation("procMount", 'container "a" must not set securityContext.procMount to "Unmasked"')),
    ("baseline seccomp refuses Unconfined on the pod", checks.seccomp_profile_baseline, {},
     spec(security={"seccompProfile": {"type": "Unconfined"}}),
     Violation("seccompProfile", 'pod must not set securityContext.seccompProfile.type to "Unconfined"')),
    ("baseline seccomp lets it be unset", checks.seccomp_profile_baseline, {}, spec(), None),
    ("unsafe sysctls are listed in order, safe ones not", checks.sysctls, {},
     spec(security={"sysctls": [{"name": "kernel.msgmax", "value": "1"}, {"name": "net.ipv4.tcp_rmem", "value": "1"},
                                {"name": "net.ipv4.ip_forward", "value": "1"}]}),
     Violation("forbidden sysctls", "kernel.msgmax, net.ipv4.ip_forward")),
    ("a Windows host process pod", checks.windows_host_process, {},
     spec(security={"windowsOptions": {"hostProcess": True}}),
     Violation("hostProcess", "pod must not set securityContext.windowsOptions.hostProcess=true")),
    ("allowPrivilegeEscalation unset and true both fail", checks.allow_privilege_escalation, {},
     spec(ctr("a"), ctr("b", allowPrivilegeEscalation=True), ctr("c", allowPrivilegeEscalation=False)),
     Violation("allowPrivilegeEscalation != false",
               'containers "a", "b" must set securityContext.allowPrivilegeEscalation=false')),
    ("Windows pods need not set allowPrivilegeEscalation", checks.allow_privilege_escalation, {},
     spec(os={"name": "windows"}), None),
    ("containers must drop ALL and add nothing but NET_BIND_SERVICE", checks.capabilities_restricted, {},
     spec(ctr("a"), ctr("b", capabilities={"drop": ["ALL"], "add": ["SYS_ADMIN", "NET_BIND_SERVICE"]})),
     Violation("unrestricted capabilities", 'container "a" must set securityContext.capabilities.drop=["ALL"]; '
               'container "b" must not include "SYS_ADMIN" in securityContext.capabilities.add')),
    ("dropping ALL and adding NET_BIND_SERVICE passes", checks.capabilities_restricted, {},
     spec(ctr(capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]})), None),
    ("restricted volume types are named, sorted", checks.restricted_volumes, {},
     spec(volumes=[volume("n", "nfs", {"server": "x", "path": "/"}), volume("h", "hostPath"),
                   volume("c", "configMap", {"name": "x"}), volume("i", "image", {"reference": "x"})]),
     Violation("restricted volume types",
               'volumes "n", "h", "i" use restricted volume types "hostPath", "nfs", "unknown"')),
    ("one restricted volume", checks.restricted_volumes, {}, spec(volumes=[volume("h", "hostPath")]),
     Violation("restricted volume types", 'volume "h" uses restricted volume type "hostPath"')),
    ("the projected service account token volume is allowed", checks.restricted_volumes, {},
     spec(volumes=[SA_TOKEN, volume("s", "secret", {"secretName": "x"}), volume("e", "emptyDir")]), None),
    ("runAsNonRoot unset everywhere", checks.run_as_non_root, {}, spec(ctr("a"), ctr("b")),
     Violation("runAsNonRoot != true", 'pod or containers "a", "b" must set securityContext.runAsNonRoot=true')),
    ("runAsNonRoot=false on a container wins over the pod's true", checks.run_as_non_root, {},
     spec(ctr("a", runAsNonRoot=False), security={"runAsNonRoot": True}),
     Violation("runAsNonRoot != true", 'container "a" must not set securityContext.runAsNonRoot=false')),
    ("runAsNonRoot=false on the pod", checks.run_as_non_root, {}, spec(security={"runAsNonRoot": False}),
     Violation("runAsNonRoot != true", "pod must not set securityContext.runAsNonRoot=false")),
    ("runAsNonRoot on the pod covers its containers", checks.run_as_non_root, {},
     spec(security={"runAsNonRoot": True}), None),
    ("runAsUser=0 on the pod and a container", checks.run_as_user, {},
     spec(ctr("a", runAsUser=0), ctr("b", runAsUser=1000), security={"runAsUser": 0}),
     Violation("runAsUser=0", 'pod and container "a" must not set runAsUser=0')),
    ("restricted seccomp must be set", checks.seccomp_profile_restricted, {},
     spec(ctr("a"), ctr("b", seccompProfile={"type": "Localhost", "localhostProfile": "p.json"})),
     Violation("seccompProfile", 'pod or container "a" must set securityContext.seccompProfile.type to '
               '"RuntimeDefault" or "Localhost"')),
    ("restricted seccomp refuses an explicit Unconfined first", checks.seccomp_profile_restricted, {},
     spec(ctr("a"), ctr("b", seccompProfile={"type": "Unconfined"})),
     Violation("seccompProfile", 'container "b" must not set securityContext.seccompProfile.type to "Unconfined"')),
    ("a pod-level RuntimeDefault covers its containers", checks.seccomp_profile_restricted, {},
     spec(ctr("a"), security={"seccompProfile": {"type": "RuntimeDefault"}}), None),
    ("ephemeral containers are checked too", checks.privileged, {},
     spec(ephemeral=(ctr("debug", privileged=True),)),
     Violation("privileged", 'container "debug" must not set securityContext.privileged=true')),
]


@pytest.mark.parametrize(("check", "metadata", "pod_spec", "expected"), [c[1:] for c in CHECK_CASES],
                         ids=[c[0] for c in CHECK_CASES])
def test_check(check: checks.CheckFn, metadata: Obj, pod_spec: Obj, expected: Violation | None) -> None:
    assert check(metadata, pod_spec) == expected


def test_every_check_has_a_unique_kube_id() -> None:
    ids = [c.id for c in checks.CHECKS]
    assert len(ids) == len(set(ids)) == 17


# levels and the order of violations --------------------------------------------------------------

RESTRICTED_LATEST = LevelVersion("restricted")


def test_a_plain_pod_violates_restricted_in_kubes_order_and_words() -> None:
    result = evaluate(RESTRICTED_LATEST, {}, spec())
    assert result.detail() == (
        'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), '
        'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), '
        'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" '
        'or "Localhost")')
    assert result.reason() == ("allowPrivilegeEscalation != false, unrestricted capabilities, "
                               "runAsNonRoot != true, seccompProfile")


def test_baseline_violations_come_before_restricted_ones() -> None:
    result = evaluate(RESTRICTED_LATEST, {}, spec(good(privileged=True), hostPID=True))
    assert result.reason() == "host namespaces, privileged"
    result = evaluate(RESTRICTED_LATEST, {}, spec(good(capabilities={"drop": ["ALL"], "add": ["SYS_ADMIN"]})))
    assert result.reason() == "unrestricted capabilities"  # replaces the baseline capabilities check


@pytest.mark.parametrize(("level", "pod_spec", "allowed"), [
    ("privileged", spec(ctr(privileged=True), hostNetwork=True), True),
    ("baseline", spec(), True),
    ("baseline", spec(ctr(privileged=True)), False),
    ("restricted", spec(good(), volumes=[SA_TOKEN]), True),
    ("restricted", spec(good(), security={"runAsUser": 0}), False),
], ids=["privileged allows anything", "baseline allows a plain pod", "baseline refuses a privileged pod",
        "restricted allows a compliant pod with a token volume", "restricted refuses runAsUser=0"])
def test_levels(level: str, pod_spec: Obj, allowed: bool) -> None:
    assert evaluate(LevelVersion(level), {}, pod_spec).allowed is allowed


LABEL_CASES = [
    ("no labels: privileged everywhere", {}, Policy(), []),
    ("an enforce level also sets warn", {L + "enforce": "restricted"},
     Policy(enforce=RESTRICTED_LATEST, warn=RESTRICTED_LATEST), []),
    ("warn follows the enforce version", {L + "enforce": "baseline", L + "enforce-version": "v1.30"},
     Policy(enforce=LevelVersion("baseline", "v1.30"), warn=LevelVersion("baseline", "v1.30")), []),
    ("an explicit warn level wins", {L + "enforce": "restricted", L + "warn": "privileged"},
     Policy(enforce=RESTRICTED_LATEST), []),
    ("an explicit warn version stays", {L + "enforce": "restricted", L + "warn-version": "v1.29"},
     Policy(enforce=RESTRICTED_LATEST, warn=LevelVersion("restricted", "v1.29")), []),
    ("audit alone", {L + "audit": "baseline"}, Policy(audit=LevelVersion("baseline")), []),
    ("a bad enforce level fails closed and does not set warn", {L + "enforce": "bogus"},
     Policy(enforce=RESTRICTED_LATEST),
     ['metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "bogus": '
      "must be one of privileged, baseline, restricted"]),
    ("a bad warn level fails open", {L + "warn": "Restricted"}, Policy(),
     ['metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "Restricted": '
      "must be one of privileged, baseline, restricted"]),
    ("a bad version means latest", {L + "enforce": "baseline", L + "enforce-version": "1.30"},
     Policy(enforce=LevelVersion("baseline"), warn=LevelVersion("baseline")),
     ['metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: "1.30": '
      'must be "latest" or "v1.x"']),
    ("a leading zero in the version is bad", {L + "audit-version": "v1.01"}, Policy(),
     ['metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid value: "v1.01": '
      'must be "latest" or "v1.x"']),
]


@pytest.mark.parametrize(("labels", "expected", "problems"), [c[1:] for c in LABEL_CASES],
                         ids=[c[0] for c in LABEL_CASES])
def test_policy_for_labels(labels: dict[str, str], expected: Policy, problems: list[str]) -> None:
    policy, found = policy_for(labels)
    assert policy == expected
    assert [e.describe() for e in found] == problems


@pytest.mark.parametrize(("new", "old", "significant"), [
    (spec(ctr(image="a")), spec(ctr(image="a")), False),
    (spec(ctr(image="b")), spec(ctr(image="a")), True),
    (spec(ctr(), ctr("d")), spec(ctr()), True),
    (spec(init=(ctr("i", image="b"),)), spec(init=(ctr("i", image="a"),)), True),
    (spec(ephemeral=(ctr("debug"),)), spec(), True),
    (spec(ephemeral=(ctr("debug"),)), spec(ephemeral=(ctr("debug"),)), False),
], ids=["nothing the checks see changed", "an image changed", "a container was added",
        "an init container's image changed", "an ephemeral container was added", "the same ephemeral container"])
def test_significant_update(new: Obj, old: Obj, significant: bool) -> None:
    assert significant_update(new, old) is significant


# the plugin --------------------------------------------------------------------------------------

class FakeState:
    """Namespaces (by name, with labels) and pods, as the watch cache would answer."""

    def __init__(self, namespaces: dict[str, dict[str, str]], pods: list[Obj] | None = None) -> None:
        self.namespaces = {name: {"metadata": {"name": name, "labels": labels}} for name, labels in namespaces.items()}
        self.pods = pods or []

    def get(self, group: str, resource: str, namespace: str, name: str) -> Obj | None:
        assert (group, resource) == ("", "namespaces")
        return self.namespaces.get(name)

    def list(self, group: str, resource: str, namespace: str = "") -> list[Obj]:
        assert (group, resource) == ("", "pods")
        return self.pods

    async def update(self, *args: Any, **kwargs: Any) -> Obj:
        raise AssertionError("PodSecurity never writes")


def attrs(obj: Obj | None, operation: str = CREATE, *, resource: str = "pods", group: str = "",
          old: Obj | None = None, subresource: str = "", namespace: str = "ns") -> Attributes:
    kind = (obj or {}).get("kind", "Pod")
    return Attributes(operation=operation, group=group, version="v1", resource=resource, kind=(group, "v1", kind),
                      user=UserInfo(username="alice"), namespace=namespace, subresource=subresource, object=obj,
                      old_object=old)


def plugin(labels: dict[str, str] | None = None, pods: list[Obj] | None = None) -> PodSecurity:
    return PodSecurity(FakeState({"ns": labels or {}}, pods), namespace_wait=0)


RESTRICTED_DETAIL = evaluate(RESTRICTED_LATEST, {}, spec()).detail()


async def test_enforce_refuses_a_violating_pod_with_kubes_message() -> None:
    a = attrs(pod())
    with pytest.raises(APIError) as refused:
        await plugin({L + "enforce": "restricted"}).validate(a)
    assert refused.value.code == 403 and refused.value.reason == "Forbidden"
    assert refused.value.message == \
        f'pods "p" is forbidden: violates PodSecurity "restricted:latest": {RESTRICTED_DETAIL}'
    assert a.warnings == []  # a refused request gets no warnings
    assert a.audit_annotations == {L + "enforce-policy": "restricted:latest"}


async def test_an_unlabelled_namespace_is_privileged() -> None:
    a = attrs(pod(pod_spec=spec(ctr(privileged=True), hostNetwork=True)))
    await plugin().validate(a)
    assert a.warnings == [] and a.audit_annotations == {L + "enforce-policy": "privileged:latest"}


async def test_a_compliant_pod_is_admitted_in_a_restricted_namespace() -> None:
    a = attrs(pod(pod_spec=spec(good(), volumes=[SA_TOKEN])))
    await plugin({L + "enforce": "restricted"}).validate(a)
    assert a.warnings == []


async def test_warn_admits_with_a_warning() -> None:
    a = attrs(pod())
    await plugin({L + "warn": "restricted", L + "warn-version": "v1.31"}).validate(a)
    assert a.warnings == [f'would violate PodSecurity "restricted:v1.31": {RESTRICTED_DETAIL}']
    assert L + "audit-violations" not in a.audit_annotations


async def test_audit_admits_with_an_audit_annotation() -> None:
    a = attrs(pod(pod_spec=spec(ctr(privileged=True))))
    await plugin({L + "audit": "baseline"}).validate(a)
    assert a.warnings == []
    assert a.audit_annotations == {
        L + "enforce-policy": "privileged:latest",
        L + "audit-violations": 'would violate PodSecurity "baseline:latest": '
                                'privileged (container "c" must not set securityContext.privileged=true)'}


async def test_enforce_baseline_and_warn_restricted() -> None:
    a = attrs(pod())
    await plugin({L + "enforce": "baseline", L + "warn": "restricted"}).validate(a)
    assert a.warnings == [f'would violate PodSecurity "restricted:latest": {RESTRICTED_DETAIL}']


async def test_a_bad_enforce_label_enforces_restricted_and_records_the_error() -> None:
    a = attrs(pod())
    with pytest.raises(APIError, match='violates PodSecurity "restricted:latest"'):
        await plugin({L + "enforce": "bogus"}).validate(a)
    assert a.audit_annotations[L + "error"] == (
        'Failed to parse policy: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "bogus": '
        "must be one of privileged, baseline, restricted")


async def test_updates_that_change_no_image_are_not_evaluated() -> None:
    old = pod()
    relabelled = pod(labels={"app": "web"})
    await plugin({L + "enforce": "restricted"}).validate(attrs(relabelled, UPDATE, old=old))
    new_image = pod(pod_spec=spec(ctr(image="nginx:2")))
    with pytest.raises(APIError, match="violates PodSecurity"):
        await plugin({L + "enforce": "restricted"}).validate(attrs(new_image, UPDATE, old=old))


@pytest.mark.parametrize(("subresource", "refused"), [("status", False), ("binding", False), ("exec", False),
                                                      ("ephemeralcontainers", True)])
async def test_pod_subresources(subresource: str, refused: bool) -> None:
    old = pod(pod_spec=spec(good()))
    debugged = pod(pod_spec=spec(good(), ephemeral=(ctr("debug"),)))
    a = attrs(debugged, UPDATE, old=old, subresource=subresource)
    if refused:
        with pytest.raises(APIError, match='container "debug" must set'):
            await plugin({L + "enforce": "restricted"}).validate(a)
    else:
        await plugin({L + "enforce": "restricted"}).validate(a)


def deployment(pod_spec: Obj) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"metadata": {"labels": {"app": "d"}}, "spec": pod_spec}}}


async def test_a_controller_is_warned_about_never_refused() -> None:
    a = attrs(deployment(spec()), resource="deployments", group="apps")
    await plugin({L + "enforce": "restricted"}).validate(a)
    assert a.warnings == [f'would violate PodSecurity "restricted:latest": {RESTRICTED_DETAIL}']
    assert L + "enforce-policy" not in a.audit_annotations


async def test_a_cronjobs_template_is_found_under_its_job_template() -> None:
    cronjob = {"kind": "CronJob", "metadata": {"name": "cj"},
               "spec": {"jobTemplate": {"spec": {"template": {"spec": spec(ctr(privileged=True))}}}}}
    a = attrs(cronjob, resource="cronjobs", group="batch")
    await plugin({L + "audit": "baseline"}).validate(a)
    assert "privileged" in a.audit_annotations[L + "audit-violations"]


async def test_a_controller_without_a_template_is_skipped() -> None:
    a = attrs({"kind": "ReplicationController", "metadata": {"name": "rc"}, "spec": {}},
              resource="replicationcontrollers")
    await plugin({L + "warn": "restricted"}).validate(a)
    assert a.warnings == []


async def test_a_missing_namespace_fails_a_pod_but_not_a_controller() -> None:
    with pytest.raises(APIError) as failed:
        await plugin().validate(attrs(pod(), namespace="gone"))
    assert failed.value.code == 500 and failed.value.message == \
        'Internal error occurred: failed to lookup namespace "gone"'
    a = attrs(deployment(spec()), resource="deployments", group="apps", namespace="gone")
    await plugin().validate(a)
    assert a.audit_annotations == {L + "error": 'failed to lookup namespace "gone"'}


def namespace(labels: dict[str, str]) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns", "labels": labels}}


async def test_a_namespace_with_a_bad_level_is_invalid() -> None:
    with pytest.raises(APIError) as refused:
        await plugin().validate(attrs(namespace({L + "enforce": "bogus"}), resource="namespaces"))
    assert refused.value.code == 422 and refused.value.reason == "Invalid"
    assert refused.value.message == (
        'Namespace "ns" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "bogus": '
        "must be one of privileged, baseline, restricted")
    assert refused.value.details["causes"][0]["field"] == "metadata.labels[pod-security.kubernetes.io/enforce]"


async def test_bad_labels_already_there_may_stay_but_not_change() -> None:
    bad = namespace({L + "enforce": "bogus"})
    relabelled = namespace({L + "enforce": "bogus", "team": "a"})
    await plugin().validate(attrs(relabelled, UPDATE, resource="namespaces", old=bad))
    worse = namespace({L + "enforce": "bogus2"})
    with pytest.raises(APIError, match="is invalid"):
        await plugin().validate(attrs(worse, UPDATE, resource="namespaces", old=bad))


def running(name: str, pod_spec: Obj, owner: str = "") -> Obj:
    p = pod(name, pod_spec)
    if owner:
        p["metadata"]["ownerReferences"] = [{"uid": owner, "controller": True, "kind": "ReplicaSet", "name": "rs"}]
    return p


async def test_raising_enforce_warns_about_existing_pods() -> None:
    pods = [running("web-b", spec()), running("web-a", spec()), running("ok", spec(good())),
            running("priv", spec(good(privileged=True))), running("x3", spec())]
    a = attrs(namespace({L + "enforce": "restricted"}), UPDATE, resource="namespaces", old=namespace({}))
    await plugin(pods=pods).validate(a)
    plain = "allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile"
    assert a.warnings == [
        'existing pods in namespace "ns" violate the new PodSecurity enforce level "restricted:latest"',
        "priv: privileged",
        f"web-a (and 2 other pods): {plain}",
    ]


@pytest.mark.parametrize(("old", "new"), [
    ({L + "enforce": "restricted"}, {L + "enforce": "baseline"}),
    ({L + "enforce": "restricted"}, {L + "enforce": "restricted", "team": "a"}),
    ({}, {L + "enforce": "privileged"}),
    ({}, {L + "warn": "restricted"}),
], ids=["lowering the level", "keeping the level", "an explicit privileged level", "a warn level"])
async def test_namespace_updates_that_check_no_pods(old: dict[str, str], new: dict[str, str]) -> None:
    a = attrs(namespace(new), UPDATE, resource="namespaces", old=namespace(old))
    await plugin(pods=[running("bad", spec(ctr(privileged=True)))]).validate(a)
    assert a.warnings == []


async def test_a_new_enforce_version_checks_pods_again() -> None:
    a = attrs(namespace({L + "enforce": "baseline"}), UPDATE, resource="namespaces",
              old=namespace({L + "enforce": "baseline", L + "enforce-version": "v1.30"}))
    await plugin(pods=[running("bad", spec(ctr(privileged=True)))]).validate(a)
    assert a.warnings[1:] == ["bad: privileged"]


async def test_only_so_many_pods_are_checked_one_per_controller_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(podsecurity, "MAX_PODS_TO_CHECK", 2)
    pods = [running("rs-1", spec(good()), owner="u1"), running("rs-2", spec(good()), owner="u1"),
            running("solo", spec(good(privileged=True)))]
    a = attrs(namespace({L + "enforce": "baseline"}), UPDATE, resource="namespaces", old=namespace({}))
    await plugin(pods=pods).validate(a)
    assert a.warnings == [
        "new PodSecurity enforce level only checked against the first 2 of 3 existing pods",
        'existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest"',
        "solo: privileged",
    ]


async def test_a_retried_update_says_each_warning_once() -> None:
    a = attrs(pod())
    for _ in range(2):
        await plugin({L + "warn": "restricted"}).validate(a)
    assert len(a.warnings) == 1


def test_podsecurity_is_on_by_default() -> None:
    assert "PodSecurity" in chain.enabled_plugins([], [])
    assert "PodSecurity" not in chain.enabled_plugins([], ["PodSecurity"])
