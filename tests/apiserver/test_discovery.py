"""Discovery, version, health and Tables, as kubectl reads them."""

from __future__ import annotations

import httpx

from tests.apiserver.test_rest import pod, pods_url

AGGREGATED = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
              "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"


def test_version_is_semver_and_answers_with_trailing_slash(api: httpx.Client) -> None:
    for path in ("/version", "/version/"):
        info = api.get(path).json()
        assert info["major"] == "1" and info["minor"] == "32" and info["gitVersion"].startswith("v1.32.")


def test_aggregated_discovery_is_recognised_by_content_type(api: httpx.Client) -> None:
    r = api.get("/apis", headers={"Accept": AGGREGATED})
    assert r.headers["content-type"].startswith("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    groups = {item["metadata"]["name"]: item for item in r.json()["items"]}
    assert {"apps", "batch", "rbac.authorization.k8s.io", "apiextensions.k8s.io"} <= set(groups)
    assert [v["version"] for v in groups["autoscaling"]["versions"]] == ["v2", "v1"]
    deployments = next(res for res in groups["apps"]["versions"][0]["resources"] if res["resource"] == "deployments")
    assert deployments["categories"] == ["all"] and deployments["shortNames"] == ["deploy"]
    scale = next(s for s in deployments["subresources"] if s["subresource"] == "scale")
    assert scale["responseKind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}


def test_core_aggregated_discovery(api: httpx.Client) -> None:
    body = api.get("/api", headers={"Accept": AGGREGATED}).json()
    (core,) = body["items"]
    assert core["metadata"]["name"] == ""
    pods = next(r for r in core["versions"][0]["resources"] if r["resource"] == "pods")
    assert pods["scope"] == "Namespaced" and pods["singularResource"] == "pod"


def test_legacy_discovery_documents(api: httpx.Client) -> None:
    assert api.get("/api").json()["versions"] == ["v1"]
    group_list = api.get("/apis").json()
    assert group_list["kind"] == "APIGroupList"
    apps = api.get("/apis/apps").json()
    assert apps["preferredVersion"]["groupVersion"] == "apps/v1"
    resources = {r["name"]: r for r in api.get("/api/v1").json()["resources"]}
    assert resources["pods"]["namespaced"] and "pods/status" in resources and "pods/binding" in resources
    apps_v1 = {r["name"]: r for r in api.get("/apis/apps/v1").json()["resources"]}
    assert apps_v1["deployments/scale"]["group"] == "autoscaling"
    assert api.get("/apis/nope").status_code == 404


def test_health_endpoints(api: httpx.Client) -> None:
    for path in ("/healthz", "/livez", "/readyz"):
        r = api.get(path)
        assert r.status_code == 200 and r.text == "ok"
    verbose = api.get("/readyz", params={"verbose": "1"}).text
    assert "[+]etcd ok" in verbose and verbose.strip().endswith("readyz check passed")


def test_list_as_table_has_pod_columns_and_metadata_rows(api: httpx.Client, namespace: str) -> None:
    api.post(pods_url(namespace), json=pod("tbl", {"app": "x"}))
    table = api.get(pods_url(namespace), headers={"Accept": TABLE}).json()
    assert table["kind"] == "Table"
    columns = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
    assert columns[:5] == [("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0)]
    assert ("IP", 1) in columns and ("Node", 1) in columns
    (row,) = table["rows"]
    assert row["cells"][:3] == ["tbl", "0/1", "Pending"] and str(row["cells"][3]) == "0"
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["labels"] == {"app": "x"}


def test_single_object_as_table(api: httpx.Client, namespace: str) -> None:
    api.post(pods_url(namespace), json=pod("one"))
    table = api.get(pods_url(namespace, "one"), headers={"Accept": TABLE},
                    params={"includeObject": "Object"}).json()
    assert len(table["rows"]) == 1 and table["rows"][0]["object"]["kind"] == "Pod"


def test_openapi_v3_lets_kubectl_validate_on_the_server(api: httpx.Client) -> None:
    index = api.get("/openapi/v3").json()["paths"]
    url = index["apis/apps/v1"]["serverRelativeURL"]
    r = api.get(url)
    assert r.status_code == 200 and r.headers["etag"]
    doc = r.json()
    patch = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert any(p.get("name") == "fieldValidation" and p.get("in") == "query" for p in patch["parameters"])
    schema = doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]
    assert schema["x-kubernetes-group-version-kind"] == [{"group": "apps", "version": "v1", "kind": "Deployment"}]
    assert api.get("/openapi/v3/apis/nope/v1").status_code == 404
