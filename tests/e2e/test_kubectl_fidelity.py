"""The commands that need more than JSON CRUD: apply (strategic merge patch), set image, the typed
`kubectl create <kind>` commands (protobuf bodies), and custom resources, with the real kubectl."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import KubeCluster, unique, wait_until
from tests.e2e.test_kubectl import write


def deployment(name: str, replicas: int, image: str = "nginx:1.27") -> str:
    labels = {"app": name}
    return yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "web", "image": image,
                                                       "ports": [{"containerPort": 80}]}]}}}})


def test_apply_creates_then_patches_without_losing_fields(cluster: KubeCluster, namespace: str,
                                                          tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", deployment("app", 2))
    assert "deployment.apps/app created" in cluster.kubectl("apply", "-n", namespace, "-f", str(path)).stdout
    assert "unchanged" in cluster.kubectl("apply", "-n", namespace, "-f", str(path)).stdout
    write(tmp_path, "d.yaml", deployment("app", 3, image="nginx:1.28"))
    result = cluster.kubectl("apply", "-n", namespace, "-f", str(path))
    assert "deployment.apps/app configured" in result.stdout and "error" not in result.stderr.lower()
    live = cluster.kubectl_json("get", "deployment", "app", "-n", namespace)
    container = live["spec"]["template"]["spec"]["containers"][0]
    assert live["spec"]["replicas"] == 3 and container["image"] == "nginx:1.28"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert "kubectl.kubernetes.io/last-applied-configuration" in live["metadata"]["annotations"]


def test_set_image_changes_one_container_by_name(cluster: KubeCluster, namespace: str) -> None:
    cluster.apply_manifest(deployment("img", 1), namespace)
    cluster.kubectl("set", "image", "deployment/img", "web=nginx:1.29", "-n", namespace)
    container = cluster.kubectl_json("get", "deployment", "img", "-n", namespace)["spec"]["template"]["spec"][
        "containers"][0]
    assert container["image"] == "nginx:1.29" and container["ports"][0]["containerPort"] == 80


@pytest.mark.parametrize("args,kind,check", [
    (["configmap", "cfg", "--from-literal=a=b"], "configmap", lambda o: o["data"] == {"a": "b"}),
    (["deployment", "dep", "--image=nginx:1.27", "--replicas=0"], "deployment",
     lambda o: o["spec"]["replicas"] == 0),
    (["service", "clusterip", "svc", "--tcp=80:8080"], "service",
     lambda o: o["spec"]["ports"][0]["targetPort"] == 8080 and o["spec"]["clusterIP"]),
    (["secret", "generic", "sec", "--from-literal=k=v"], "secret", lambda o: o["data"] == {"k": "dg=="}),
    (["serviceaccount", "robot"], "serviceaccount", lambda o: o["metadata"]["name"] == "robot"),
    (["job", "once", "--image=busybox"], "job", lambda o: o["spec"]["template"]["spec"]["containers"]),
    (["role", "reader", "--verb=get", "--resource=pods"], "role", lambda o: o["rules"][0]["verbs"] == ["get"]),
])
def test_typed_create_commands_send_protobuf_that_the_server_decodes(cluster: KubeCluster, namespace: str,
                                                                     args: list[str], kind: str, check) -> None:
    cluster.kubectl("create", *args, "-n", namespace)
    name = args[2] if args[0] in ("service", "secret") else args[1]
    assert check(cluster.kubectl_json("get", kind, name, "-n", namespace))


def test_create_namespace_sends_protobuf(cluster: KubeCluster) -> None:
    name = unique("proto")
    assert f"namespace/{name} created" in cluster.kubectl("create", "namespace", name).stdout
    assert cluster.kubectl_json("get", "namespace", name)["status"]["phase"] == "Active"


def test_unknown_field_warnings_and_errors(cluster: KubeCluster, namespace: str, tmp_path: Path) -> None:
    path = write(tmp_path, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w\ndata:\n  a: b\n"
                                      "extra: 1\n")
    warned = cluster.kubectl("create", "-n", namespace, "--validate=warn", "-f", str(path))
    assert 'unknown field "extra"' in warned.stderr
    assert "extra" not in cluster.kubectl_json("get", "configmap", "w", "-n", namespace)


def test_a_custom_resource_definition_is_usable_with_kubectl(cluster: KubeCluster, namespace: str,
                                                             tmp_path: Path) -> None:
    group = f"{namespace}.example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "shortNames": ["gd"]},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {
                                   "type": "object", "description": "A gadget for the tests.",
                                   "properties": {"spec": {"type": "object", "properties": {
                                       "color": {"type": "string", "description": "The gadget's color."}}}}}},
                               "additionalPrinterColumns": [{"name": "Color", "type": "string",
                                                             "jsonPath": ".spec.color"}]}]},
    }
    cluster.kubectl("create", "-f", str(write(tmp_path, "crd.yaml", yaml.safe_dump(crd))))
    cluster.kubectl("wait", "--for=condition=Established", f"crd/gadgets.{group}", "--timeout=20s")
    gadget = {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": {"color": "red"}}
    cluster.kubectl("create", "-n", namespace, "-f", str(write(tmp_path, "g.yaml", yaml.safe_dump(gadget))))
    explained = cluster.kubectl("explain", "gadget.spec.color").stdout
    assert "The gadget's color." in explained and "KIND:       Gadget" in explained
    table = cluster.kubectl("get", "gd", "-n", namespace).stdout
    assert table.split("\n")[0].split() == ["NAME", "COLOR"] and table.split("\n")[1].split() == ["g1", "red"]
    cluster.kubectl("patch", "gd", "g1", "-n", namespace, "--type=merge", "-p", '{"spec":{"color":"blue"}}')
    assert cluster.kubectl_json("get", "gadget", "g1", "-n", namespace)["spec"]["color"] == "blue"
    refused = cluster.kubectl("patch", "gd", "g1", "-n", namespace, "-p", '{"spec":{"color":"x"}}',
                              expect_failure=True)
    assert "application/strategic-merge-patch+json is not supported" in refused.stderr
    cluster.kubectl("delete", "crd", f"gadgets.{group}")
    wait_until(lambda: cluster.kubectl("get", "crd", f"gadgets.{group}", check=False).returncode != 0,
               "the CRD to be deleted")
