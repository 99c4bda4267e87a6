"""Discovery read from a real apiserver (client/discovery.py)."""

from __future__ import annotations

import httpx

from minikube_py.client import resources
from minikube_py.client.discovery import discover, with_verbs
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.rest import RESTClient
from tests.harness import ControlPlane


async def test_discovery_lists_builtin_and_custom_resources(control_plane: ControlPlane, api: httpx.Client) -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.disc.example.com"},
           "spec": {"group": "disc.example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    assert api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd).status_code == 201
    try:
        async with RESTClient(load_kubeconfig(str(control_plane.kubeconfig))) as client:
            found = await discover(client)
        assert not found.failed
        pods = found.resource_for("v1", "Pod")
        assert pods is not None and pods.plural == "pods" and pods.namespaced and "delete" in pods.verbs
        assert pods is resources.PODS  # the value controllers name their shared informers by
        nodes = found.resource_for("v1", "Node")
        assert nodes is not None and not nodes.namespaced
        assert found.resource_for("apps/v1", "Deployment") is not None
        widget = found.resource_for("disc.example.com/v1", "Widget")
        assert widget is not None and widget.plural == "widgets"
        assert found.resource_for("apps/v1", "Nothing") is None
        assert all("/" not in r.plural for r in found.resources)  # no subresources
        preferred = found.preferred()
        hpa_versions = {r.version for r in preferred if r.plural == "horizontalpodautoscalers"}
        assert hpa_versions == {"v2"}  # one version per group
        deletable = with_verbs(preferred, "list", "watch", "delete")
        assert "pods" in {r.plural for r in deletable}
        assert "tokenreviews" not in {r.plural for r in deletable}  # create-only
    finally:
        api.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.disc.example.com")
