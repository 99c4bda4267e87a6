"""Whatever JSON a client sends, the answer is a Status or an object: never a 500, never a hang.

Hypothesis generates object-shaped bodies with the right apiVersion and kind but arbitrary (often wrongly
typed) metadata, spec and status, and sends them as creates and updates to several kinds.
"""

from __future__ import annotations

from urllib.parse import quote

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

KINDS = [
    ("/api/v1/namespaces/{ns}/pods", "v1", "Pod"),
    ("/api/v1/namespaces/{ns}/services", "v1", "Service"),
    ("/api/v1/namespaces/{ns}/configmaps", "v1", "ConfigMap"),
    ("/apis/apps/v1/namespaces/{ns}/deployments", "apps/v1", "Deployment"),
    ("/apis/batch/v1/namespaces/{ns}/jobs", "batch/v1", "Job"),
    ("/api/v1/namespaces/{ns}/events", "v1", "Event"),
    ("/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers", "autoscaling/v1", "HorizontalPodAutoscaler"),
    ("/apis/rbac.authorization.k8s.io/v1/clusterroles", "rbac.authorization.k8s.io/v1", "ClusterRole"),
]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.text(max_size=12),
                    st.floats(allow_nan=False, allow_infinity=False))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                            st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                           max_leaves=12)
field_names = st.sampled_from(["containers", "ports", "selector", "replicas", "template", "type", "clusterIP",
                               "labels", "annotations", "finalizers", "name", "image", "data", "rules",
                               "involvedObject", "scaleTargetRef", "nodePort", "metadata", "spec"])
shaped = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(field_names, inner, max_size=4)),
                      max_leaves=16)
names = st.one_of(st.just("fuzz"), st.text(max_size=8), st.integers(), st.none())


@st.composite
def bodies(draw: st.DrawFn) -> tuple[str, dict]:
    path, api_version, kind = draw(st.sampled_from(KINDS))
    metadata = draw(st.one_of(st.fixed_dictionaries({"name": names}, optional={"labels": json_values,
                                                                               "annotations": json_values,
                                                                               "finalizers": json_values,
                                                                               "generateName": json_values}),
                              json_values))
    body = {"apiVersion": api_version, "kind": kind, "metadata": metadata}
    for section in ("spec", "status", "data", "rules", "involvedObject"):
        if draw(st.booleans()):
            body[section] = draw(shaped)
    return path, body


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=bodies())
def test_random_bodies_never_cause_server_errors(api: httpx.Client, namespace: str, case: tuple[str, dict]) -> None:
    path, body = case
    url = path.format(ns=namespace)
    r = api.post(url, json=body)
    assert r.status_code < 500, (body, r.text)
    if r.status_code == 201:
        name = quote(r.json()["metadata"]["name"], safe="")  # some kinds allow any path-segment name
        again = api.put(f"{url}/{name}", json=body)
        assert again.status_code < 500, (body, again.text)
        assert api.delete(f"{url}/{name}").status_code < 500
    else:
        assert r.json()["kind"] == "Status"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(patch=st.dictionaries(field_names, shaped, max_size=3))
def test_random_merge_patches_never_cause_server_errors(api: httpx.Client, namespace: str, patch: dict) -> None:
    url = f"/api/v1/namespaces/{namespace}/pods"
    api.post(url, json={"metadata": {"name": "target"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    r = api.patch(f"{url}/target", json=patch, headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code < 500, (patch, r.text)
