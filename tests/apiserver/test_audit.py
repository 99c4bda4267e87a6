"""Audit against a real apiserver: the log it writes for each level, stage and outcome."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import ControlPlane

POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ['/readyz*', '/healthz*', '/livez*']
- level: None
  resources: [{group: '', resources: [events]}]
- level: RequestResponse
  resources: [{group: '', resources: [configmaps]}]
- level: Request
  resources: [{group: '', resources: [secrets]}]
- level: Metadata
"""


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ControlPlane, Path]]:
    workdir = tmp_path_factory.mktemp("audit")
    (workdir / "policy.yaml").write_text(POLICY)
    log = workdir / "audit.log"
    cp = ControlPlane(extra_args=(f"--audit-policy-file={workdir / 'policy.yaml'}", f"--audit-log-path={log}"))
    try:
        yield cp.start(), log
    finally:
        cp.stop()


def events(log: Path, audit_id: str, count: int) -> list[dict[str, Any]]:
    """The events logged for `audit_id`, waiting (bounded) until `count` of them are there."""
    deadline = time.monotonic() + 10
    while True:
        found = [e for e in map(json.loads, log.read_text().splitlines()) if e["auditID"] == audit_id]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def new_namespace(api: httpx.Client) -> str:
    name = f"audit-{uuid.uuid4().hex[:8]}"
    assert api.post("/api/v1/namespaces", json={"metadata": {"name": name}}).status_code == 201
    return name


def test_request_level_logs_the_request_object_but_not_the_response(audited: tuple[ControlPlane, Path]) -> None:
    cp, log = audited
    with cp.client() as api:
        ns = new_namespace(api)
        r = api.post(f"/api/v1/namespaces/{ns}/secrets", json={"metadata": {"name": "s"}, "stringData": {"a": "b"}})
    assert r.status_code == 201
    received, complete = events(log, r.headers["Audit-Id"], 2)
    assert received["stage"] == "RequestReceived" and complete["stage"] == "ResponseComplete"
    assert complete["kind"] == "Event" and complete["apiVersion"] == "audit.k8s.io/v1"
    assert complete["level"] == "Request" and complete["verb"] == "create"
    assert complete["user"]["username"] == "kubernetes-admin" and "system:masters" in complete["user"]["groups"]
    assert complete["objectRef"] == {"resource": "secrets", "namespace": ns, "apiVersion": "v1"}
    assert complete["requestURI"] == f"/api/v1/namespaces/{ns}/secrets"
    assert complete["responseStatus"] == {"metadata": {}, "code": 201}
    assert complete["requestObject"]["metadata"]["name"] == "s" and "responseObject" not in complete
    assert complete["sourceIPs"] == ["127.0.0.1"]
    assert complete["requestReceivedTimestamp"] == received["stageTimestamp"]
    assert complete["stageTimestamp"].endswith("Z") and len(complete["stageTimestamp"]) == 27


def test_source_ips_are_the_forwarded_chain_then_the_peer_that_sent_it(audited: tuple[ControlPlane, Path]) -> None:
    """As kube: X-Forwarded-For's addresses first, then the connection's own, which a header cannot replace."""
    cp, log = audited
    with cp.client() as api:
        r = api.get("/api/v1/namespaces/default/pods", headers={"X-Forwarded-For": "10.0.0.7, 10.0.0.8"})
    assert events(log, r.headers["Audit-Id"], 2)[-1]["sourceIPs"] == ["10.0.0.7", "10.0.0.8", "127.0.0.1"]


def test_request_response_level_logs_the_response_object(audited: tuple[ControlPlane, Path]) -> None:
    cp, log = audited
    with cp.client() as api:
        ns = new_namespace(api)
        r = api.post(f"/api/v1/namespaces/{ns}/configmaps", json={"metadata": {"name": "c"}, "data": {"k": "v"}})
    complete = events(log, r.headers["Audit-Id"], 2)[-1]
    assert complete["level"] == "RequestResponse"
    assert complete["requestObject"]["data"] == {"k": "v"}
    assert complete["responseObject"]["metadata"]["uid"] == r.json()["metadata"]["uid"]


def test_a_none_rule_logs_nothing(audited: tuple[ControlPlane, Path]) -> None:
    cp, log = audited
    with cp.client() as api:
        skipped = api.get("/api/v1/namespaces/default/events")
        logged = api.get("/api/v1/namespaces/default/pods")
    assert len(events(log, logged.headers["Audit-Id"], 2)) == 2
    assert events(log, skipped.headers["Audit-Id"], 0) == []


def test_a_watch_is_logged_when_its_response_starts_and_when_it_ends(audited: tuple[ControlPlane, Path]) -> None:
    cp, log = audited
    with cp.client() as api:
        r = api.get("/api/v1/namespaces/default/pods", params={"watch": "true", "timeoutSeconds": "1"})
    stages = events(log, r.headers["Audit-Id"], 3)
    assert [e["stage"] for e in stages] == ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    assert stages[1]["verb"] == "watch" and stages[1]["responseStatus"]["code"] == 200


def test_a_failure_is_logged_with_its_status(audited: tuple[ControlPlane, Path]) -> None:
    cp, log = audited
    with cp.client() as api:
        r = api.get("/api/v1/namespaces/default/pods/missing")
    assert r.status_code == 404
    status = events(log, r.headers["Audit-Id"], 2)[-1]["responseStatus"]
    assert status["code"] == 404 and status["reason"] == "NotFound" and status["status"] == "Failure"
    assert status["message"] == 'pods "missing" not found'


def test_a_refused_login_is_logged_without_a_user(audited: tuple[ControlPlane, Path]) -> None:
    cp, log = audited
    with httpx.Client(base_url=cp.url, verify=cp.tls_context(with_admin_cert=False),
                      headers={"Authorization": "Bearer not-a-token", "Audit-ID": "client-chosen-id"}) as anonymous:
        r = anonymous.get("/api/v1/namespaces")
    assert r.status_code == 401 and r.headers["Audit-Id"] == "client-chosen-id"
    (event,) = events(log, "client-chosen-id", 1)
    assert event["stage"] == "ResponseStarted" and event["user"] == {}
    assert event["responseStatus"] == {"metadata": {}, "message": "Authentication failed, attempted: bearer",
                                       "code": 401}


@pytest.mark.parametrize(("policy", "message"), [
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n", 'Unsupported value: "Loud"'),
    ("rules: [", "cannot parse YAML"),
], ids=["an unknown level", "bad YAML"])
def test_a_bad_policy_stops_the_apiserver_with_a_one_line_error(tmp_path: Path, policy: str, message: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(policy)
    done = subprocess.run([sys.executable, "-m", "minikube_py.cli.main", "apiserver", f"--audit-policy-file={path}",
                           f"--audit-log-path={tmp_path / 'audit.log'}"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and message in done.stderr and str(path) in done.stderr
    assert "Traceback" not in done.stderr


def test_an_impersonated_request_names_both_users(audited: tuple[ControlPlane, Path]) -> None:
    cp, log = audited
    with cp.client(headers={"Impersonate-User": "alice", "Impersonate-Group": "devs"}) as api:
        r = api.get("/api/v1/namespaces/default/pods")
    received, complete = events(log, r.headers["Audit-Id"], 2)
    assert received["user"]["username"] == complete["user"]["username"] == "kubernetes-admin"
    assert "impersonatedUser" not in received  # impersonation runs after the first stage, as in kube
    assert complete["impersonatedUser"]["username"] == "alice" and "devs" in complete["impersonatedUser"]["groups"]
