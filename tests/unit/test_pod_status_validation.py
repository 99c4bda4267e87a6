"""Pod status writes are validated like kube's ValidatePodStatusUpdate, not like a whole Pod update."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from minikube_py.api.defaults import apply_defaults, prepare_for_create
from minikube_py.api.errors import FieldError
from minikube_py.api.kinds import Resource, default_registry
from minikube_py.api.validation import validate_update

Obj = dict[str, Any]
REGISTRY = default_registry()
PODS = REGISTRY.lookup("", "v1", "pods")
T = "2025-01-01T00:00:00Z"
BAD_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
STAYS_TERMINATED = "Forbidden: may not be transitioned to non-terminated state"


def make_pod(restart_policy: str = "Always", **spec: Any) -> Obj:
    pod: Obj = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "namespace": "ns", "uid": "u-1"},
                "spec": {"restartPolicy": restart_policy, "nodeName": "node-1",
                         "containers": [{"name": "app", "image": "nginx:1.27"}, {"name": "log", "image": "busybox"}],
                         **spec}}
    assert PODS is not None
    apply_defaults(PODS, pod)
    prepare_for_create(PODS, pod)
    return pod


def terminated(exit_code: int = 0) -> Obj:
    return {"terminated": {"exitCode": exit_code, "startedAt": T, "finishedAt": T}}


RUNNING: Obj = {"running": {"startedAt": T}}
WAITING: Obj = {"waiting": {"reason": "ContainerCreating"}}


def with_status(pod: Obj, **status: Any) -> Obj:
    return dict(copy.deepcopy(pod), status={"phase": "Running", **status})


def statuses(*states: tuple[str, Obj]) -> list[Obj]:
    return [{"name": name, "image": "img", "imageID": "", "ready": False, "restartCount": 0, "state": state}
            for name, state in states]


def status_errors(new: Obj, old: Obj) -> list[FieldError]:
    assert PODS is not None
    return validate_update(PODS, new, old, subresource="status")


def described(errors: list[FieldError]) -> list[str]:
    return [e.describe() for e in errors]


# container state transitions -----------------------------------------------------------------------------


@pytest.mark.parametrize(("policy", "exit_code", "allowed"), [
    ("Never", 0, False), ("Never", 1, False),
    ("OnFailure", 0, False), ("OnFailure", 137, True),
    ("Always", 0, True), ("Always", 1, True),
])
def test_a_terminated_container_stays_terminated_unless_the_policy_restarts_it(
        policy: str, exit_code: int, allowed: bool) -> None:
    pod = make_pod(policy)
    old = with_status(pod, containerStatuses=statuses(("app", terminated(exit_code)), ("log", RUNNING)))
    new = with_status(pod, containerStatuses=statuses(("app", RUNNING), ("log", RUNNING)))
    expected = [] if allowed else [f"status.containerStatuses[0].state: {STAYS_TERMINATED}"]
    assert described(status_errors(new, old)) == expected


def test_the_error_names_the_index_of_the_old_status() -> None:
    pod = make_pod("Never")
    old = with_status(pod, containerStatuses=statuses(("app", RUNNING), ("log", terminated())))
    new = with_status(pod, containerStatuses=statuses(("log", WAITING), ("app", RUNNING)))
    assert described(status_errors(new, old)) == [f"status.containerStatuses[1].state: {STAYS_TERMINATED}"]


def test_terminated_to_terminated_and_running_to_terminated_are_fine() -> None:
    pod = make_pod("Never")
    old = with_status(pod, containerStatuses=statuses(("app", terminated(1)), ("log", RUNNING)))
    new = with_status(pod, containerStatuses=statuses(("app", terminated(1)), ("log", terminated(0))))
    assert status_errors(new, old) == []


def test_init_containers_follow_the_pod_policy_but_sidecars_may_restart() -> None:
    pod = make_pod("Never", initContainers=[{"name": "setup", "image": "busybox"},
                                            {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}])
    old = with_status(pod, initContainerStatuses=statuses(("setup", terminated()), ("proxy", terminated(1))))
    new = with_status(pod, initContainerStatuses=statuses(("setup", RUNNING), ("proxy", RUNNING)))
    assert described(status_errors(new, old)) == [f"status.initContainerStatuses[0].state: {STAYS_TERMINATED}"]


def test_ephemeral_containers_never_restart_even_in_an_always_pod() -> None:
    pod = make_pod("Always")
    old = with_status(pod, ephemeralContainerStatuses=statuses(("debugger", terminated())))
    new = with_status(pod, ephemeralContainerStatuses=statuses(("debugger", RUNNING)))
    assert described(status_errors(new, old)) == [
        f"status.ephemeralContainerStatuses[0].state: {STAYS_TERMINATED}"]


# pod and host IPs -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "expected"), [
    ({"podIP": "10.0.0.7", "podIPs": [{"ip": "10.0.0.7"}]}, []),
    ({"podIP": "10.0.0.7", "podIPs": [{"ip": "10.0.0.7"}, {"ip": "fd00::7"}]}, []),
    ({"podIP": "not-an-ip"}, [f'status.podIPs[0]: Invalid value: "not-an-ip": {BAD_IP}']),
    ({"podIPs": [{"ip": "10.0.0.7"}, {"ip": "fd00::zz"}]}, [
        f'status.podIPs[1]: Invalid value: "fd00::zz": {BAD_IP}',
        "status.podIPs: Internal error: failed to check for dual stack with error:invalid IP[1]: fd00::zz",
        'status.podIPs: Invalid value: []core.PodIP{core.PodIP{IP:"10.0.0.7"}, core.PodIP{IP:"fd00::zz"}}: '
        "may specify no more than one IP for each IP family"]),
    ({"podIP": "10.0.0.7", "podIPs": [{"ip": "10.0.0.7"}, {"ip": "10.0.0.7"}]}, [
        'status.podIPs: Invalid value: []core.PodIP{core.PodIP{IP:"10.0.0.7"}, core.PodIP{IP:"10.0.0.7"}}: '
        "may specify no more than one IP for each IP family",
        'status.podIPs[1]: Duplicate value: core.PodIP{IP:"10.0.0.7"}']),
    ({"podIPs": [{"ip": "10.0.0.7"}, {"ip": "fd00::7"}, {"ip": "fd00::8"}]}, [
        'status.podIPs: Invalid value: []core.PodIP{core.PodIP{IP:"10.0.0.7"}, core.PodIP{IP:"fd00::7"}, '
        'core.PodIP{IP:"fd00::8"}}: may specify no more than one IP for each IP family']),
    # kube's v1 conversion keeps podIP when podIPs[0] differs: the mismatch itself is no error
    ({"podIP": "10.0.0.7", "podIPs": [{"ip": "10.0.0.8"}, {"ip": "bogus"}]}, []),
])
def test_pod_ips(status: Obj, expected: list[str]) -> None:
    pod = make_pod()
    assert described(status_errors(with_status(pod, **status), with_status(pod))) == expected


@pytest.mark.parametrize(("status", "expected"), [
    ({"hostIP": "192.168.1.10", "hostIPs": [{"ip": "192.168.1.10"}, {"ip": "fd00::10"}]}, []),
    ({"hostIP": "192.168.1.10"}, []),
    ({"hostIP": "192.168.1.10", "hostIPs": [{"ip": "192.168.1.11"}]},
     ['status.hostIPs[0].ip: Invalid value: "192.168.1.11": must be equal to `hostIP`']),
    ({"hostIP": "10.1.1.1", "hostIPs": [{"ip": "10.1.1.1"}, {"ip": "10.1.1.1"}]}, [
        'status.hostIPs[1]: Duplicate value: core.HostIP{IP:"10.1.1.1"}',
        'status.hostIPs: Invalid value: []core.HostIP{core.HostIP{IP:"10.1.1.1"}, core.HostIP{IP:"10.1.1.1"}}: '
        "may specify no more than one IP for each IP family"]),
    ({"hostIP": "x", "hostIPs": [{"ip": "x"}]}, [f'status.hostIPs[0]: Invalid value: "x": {BAD_IP}']),
])
def test_host_ips(status: Obj, expected: list[str]) -> None:
    pod = make_pod()
    assert described(status_errors(with_status(pod, **status), with_status(pod))) == expected


# nominated node, conditions, metadata ----------------------------------------------------------------------


def test_a_new_nominated_node_name_must_be_a_node_name() -> None:
    pod = make_pod()
    errors = status_errors(with_status(pod, nominatedNodeName="Node_1"), with_status(pod))
    assert [(e.type, e.field) for e in errors] == [("FieldValueInvalid", "status.nominatedNodeName")]
    assert errors[0].message.startswith('Invalid value: "Node_1": a lowercase RFC 1123 subdomain')


def test_an_unchanged_or_cleared_nominated_node_name_is_not_checked() -> None:
    pod = make_pod()
    bad = with_status(pod, nominatedNodeName="Node_1")
    assert status_errors(copy.deepcopy(bad), bad) == []
    assert status_errors(with_status(pod), bad) == []


def test_custom_condition_types_must_be_qualified_names() -> None:
    pod = make_pod()
    conditions = [{"type": "Ready", "status": "True"}, {"type": "example.com/warm", "status": "True"},
                  {"type": "not valid", "status": "False"}]
    errors = status_errors(with_status(pod, conditions=conditions), with_status(pod))
    assert [e.field for e in errors] == ["metadata.conditions[2].Type"]


@pytest.mark.parametrize(("old_annotations", "new_annotations", "expected"), [
    ({}, {"kubernetes.io/config.mirror": "abc"},
     ["metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation"]),
    ({"kubernetes.io/config.mirror": "abc"}, {},
     ["metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not remove or update mirror pod "
      "annotation"]),
    ({"kubernetes.io/config.mirror": "abc"}, {"kubernetes.io/config.mirror": "abd"},
     ["metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not remove or update mirror pod "
      "annotation"]),
    ({}, {"container.apparmor.security.beta.kubernetes.io/app": "runtime/default"},
     ["metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]: Forbidden: may not add "
      "AppArmor annotations"]),
    ({"kubernetes.io/config.mirror": "abc"}, {"kubernetes.io/config.mirror": "abc", "note": "x"}, []),
])
def test_pod_specific_annotations_are_fixed_on_every_pod_update(
        old_annotations: dict[str, str], new_annotations: dict[str, str], expected: list[str]) -> None:
    old = make_pod()
    old["metadata"]["annotations"] = old_annotations
    new = copy.deepcopy(old)
    new["metadata"]["annotations"] = new_annotations
    assert PODS is not None
    assert described(status_errors(new, old)) == expected
    assert described(validate_update(PODS, new, old)) == expected


def test_metadata_is_still_validated_on_a_status_write() -> None:
    pod = make_pod()
    new = with_status(pod)
    new["metadata"]["labels"] = {"bad key!": "x"}
    assert [e.field for e in status_errors(new, with_status(pod))] == ["metadata.labels"]


# what a status write does not validate ---------------------------------------------------------------------


def invalid_spec(pod: Obj) -> Obj:
    """A spec today's rules reject (an image with whitespace; kube added that check after 1.0)."""
    broken = copy.deepcopy(pod)
    broken["spec"]["containers"][0]["image"] = " nginx:1.27"
    return broken


def test_a_status_write_does_not_validate_the_stored_spec() -> None:
    old = invalid_spec(with_status(make_pod(), containerStatuses=statuses(("app", WAITING))))
    new = copy.deepcopy(old)
    new["status"]["containerStatuses"] = statuses(("app", RUNNING))
    assert PODS is not None
    assert status_errors(new, old) == []
    assert [e.field for e in validate_update(PODS, new, old)] == ["spec.containers[0].image"]


def test_a_kubelet_status_report_is_valid() -> None:
    pod = make_pod(initContainers=[{"name": "setup", "image": "busybox"}])
    old = with_status(pod, phase="Pending", conditions=[{"type": "PodScheduled", "status": "True"}])
    new = with_status(pod, hostIP="192.168.1.10", hostIPs=[{"ip": "192.168.1.10"}], podIP="10.244.1.7",
                      podIPs=[{"ip": "10.244.1.7"}], startTime=T, qosClass="BestEffort",
                      conditions=[{"type": t, "status": "True", "lastTransitionTime": T}
                                  for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                            "PodScheduled")],
                      initContainerStatuses=statuses(("setup", terminated())),
                      containerStatuses=statuses(("app", RUNNING), ("log", RUNNING)))
    assert status_errors(new, old) == []


@pytest.mark.parametrize(("plural", "group", "make"), [
    ("deployments", "apps", lambda: {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "metadata": {"name": "d", "namespace": "ns", "uid": "u"},
                                     "spec": {"selector": {"matchLabels": {"a": "b"}},
                                              "template": {"metadata": {"labels": {"a": "c"}},
                                                           "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
    ("nodes", "", lambda: {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "uid": "u"},
                           "spec": {"podCIDRs": ["bad"]}}),
])
def test_other_kinds_validate_a_status_write_like_any_update(plural: str, group: str, make: Callable[[], Obj]) -> None:
    resource = REGISTRY.lookup(group, "v1", plural)
    assert isinstance(resource, Resource)
    old = make()
    apply_defaults(resource, old)
    new = dict(copy.deepcopy(old), status={"observedGeneration": 1})
    full = validate_update(resource, new, old)
    assert full and validate_update(resource, new, old, subresource="status") == full
