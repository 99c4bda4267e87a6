"""CustomResourceDefinition names: within a group no two CRDs share a resource name or a kind.

A CRD whose names collide with those another CRD of its group already accepted is kept, but its status says
why (`NamesAccepted` False, kube's reason and message), it is not `Established` and nothing is served for
it, until the other CRD goes.
"""

from __future__ import annotations

import time
import uuid

import httpx
import pytest

from minikube_py.api.crd import naming_status
from tests.apiserver.test_custom_resources import CRD_URL, wait_established

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


def definition(group: str, plural: str, kind: str, **names: object) -> dict:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced", "names": {"plural": plural, "kind": kind, **names},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}]},
    }


def conditions(crd: dict) -> dict[str, dict]:
    return {c["type"]: c for c in (crd.get("status") or {}).get("conditions") or []}


def wait_names_checked(api: httpx.Client, name: str) -> dict:
    """The CRD once the apiserver has recorded whether its names are accepted."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        live = api.get(f"{CRD_URL}/{name}").json()
        if "NamesAccepted" in conditions(live):
            return live
        time.sleep(0.05)
    raise AssertionError(f"CRD {name} never got a NamesAccepted condition")


def delete_crd(api: httpx.Client, name: str) -> None:
    assert api.delete(f"{CRD_URL}/{name}").status_code == 200
    deadline = time.monotonic() + 10
    while api.get(f"{CRD_URL}/{name}").status_code != 404:
        assert time.monotonic() < deadline, f"CRD {name} was never deleted"
        time.sleep(0.05)


def served_names(api: httpx.Client, group: str) -> dict[str, list[str]]:
    """Each resource of `group`/v1 in discovery, with its short names ({} when the group is not served)."""
    r = api.get(f"/apis/{group}/v1")
    return {res["name"]: res.get("shortNames", []) for res in r.json()["resources"]} if r.status_code == 200 else {}


@pytest.fixture()
def group(api: httpx.Client) -> str:
    """A group holding an established `widgets` CRD (singular widget, kind Widget, short name wd)."""
    name = f"names-{uuid.uuid4().hex[:8]}.example.com"
    assert api.post(CRD_URL, json=definition(name, "widgets", "Widget", shortNames=["wd"])).status_code == 201
    wait_established(api, f"widgets.{name}")
    return name


@pytest.mark.parametrize("plural,kind,names,reason,message", [
    ("gadgets", "Gadget", {"shortNames": ["wd"]}, "ShortNamesConflict", '"wd" is already in use'),
    ("gadgets", "Gadget", {"shortNames": ["wd", "widget", "gd"]}, "ShortNamesConflict",
     '["wd" is already in use, "widget" is already in use]'),
    ("gadgets", "Widget", {"listKind": "GadgetList"}, "KindConflict", '"Widget" is already in use'),
    # the last conflict found is the one reported: kind, then listKind
    ("gadgets", "Widget", {}, "ListKindConflict", '"WidgetList" is already in use'),
    ("gadgets", "Gadget", {"singular": "wd"}, "SingularConflict", '"wd" is already in use'),
    ("widget", "Gadget", {"singular": "gadget"}, "PluralConflict", '"widget" is already in use'),
])
def test_a_crd_whose_names_conflict_is_kept_but_not_served(api: httpx.Client, namespace: str, group: str,
                                                            plural: str, kind: str, names: dict, reason: str,
                                                            message: str) -> None:
    r = api.post(CRD_URL, json=definition(group, plural, kind, **names))
    assert r.status_code == 201, r.text
    crd = wait_names_checked(api, f"{plural}.{group}")
    found = conditions(crd)
    assert (found["NamesAccepted"]["status"], found["NamesAccepted"]["reason"],
            found["NamesAccepted"]["message"]) == ("False", reason, message)
    assert (found["Established"]["status"], found["Established"]["reason"], found["Established"]["message"]) == (
        "False", "NotAccepted", "not all names are accepted")
    assert plural not in served_names(api, group)
    assert api.get(f"/apis/{group}/v1/namespaces/{namespace}/{plural}").status_code == 404
    # the widgets keep everything they had
    assert served_names(api, group) == {"widgets": ["wd"]}


def test_accepted_names_hold_only_what_was_accepted(api: httpx.Client, group: str) -> None:
    api.post(CRD_URL, json=definition(group, "gadgets", "Gadget", shortNames=["wd", "gd"], categories=["all"]))
    crd = wait_names_checked(api, f"gadgets.{group}")
    assert crd["status"]["acceptedNames"] == {"plural": "gadgets", "singular": "gadget", "kind": "Gadget",
                                              "listKind": "GadgetList", "categories": ["all"]}


def test_the_conflicting_crd_is_served_once_the_other_is_deleted(api: httpx.Client, namespace: str,
                                                                 group: str) -> None:
    api.post(CRD_URL, json=definition(group, "gadgets", "Gadget", shortNames=["wd"]))
    wait_names_checked(api, f"gadgets.{group}")
    delete_crd(api, f"widgets.{group}")
    crd = wait_established(api, f"gadgets.{group}")
    found = conditions(crd)
    assert (found["NamesAccepted"]["status"], found["NamesAccepted"]["reason"]) == ("True", "NoConflicts")
    assert found["Established"]["reason"] == "InitialNamesAccepted"
    assert crd["status"]["acceptedNames"]["shortNames"] == ["wd"]
    assert served_names(api, group) == {"gadgets": ["wd"]}
    url = f"/apis/{group}/v1/namespaces/{namespace}/gadgets"
    r = api.post(url, json={"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"}})
    assert r.status_code == 201, r.text


def test_aggregated_discovery_leaves_out_a_crd_that_is_not_established(api: httpx.Client, group: str) -> None:
    api.post(CRD_URL, json=definition(group, "gadgets", "Gadget", shortNames=["wd"]))
    wait_names_checked(api, f"gadgets.{group}")
    groups = {i["metadata"]["name"]: i for i in api.get("/apis", headers={"Accept": AGGREGATED}).json()["items"]}
    assert [r["resource"] for r in groups[group]["versions"][0]["resources"]] == ["widgets"]


def test_an_established_crd_keeps_serving_its_accepted_names_when_new_ones_conflict(api: httpx.Client,
                                                                                     group: str) -> None:
    api.post(CRD_URL, json=definition(group, "gadgets", "Gadget", shortNames=["gd"]))
    wait_established(api, f"gadgets.{group}")
    live = api.get(f"{CRD_URL}/gadgets.{group}").json()
    live["spec"]["names"]["shortNames"] = ["wd"]
    assert api.put(f"{CRD_URL}/gadgets.{group}", json=live).status_code == 200
    deadline = time.monotonic() + 10
    while conditions(crd := api.get(f"{CRD_URL}/gadgets.{group}").json())["NamesAccepted"]["status"] != "False":
        assert time.monotonic() < deadline, "the changed short names were never refused"
        time.sleep(0.05)
    found = conditions(crd)
    assert found["NamesAccepted"]["reason"] == "ShortNamesConflict"
    assert found["Established"]["status"] == "True"
    assert crd["status"]["acceptedNames"]["shortNames"] == ["gd"]
    assert served_names(api, group) == {"widgets": ["wd"], "gadgets": ["gd"]}


def test_of_two_crds_created_together_only_one_gets_a_shared_name(api: httpx.Client) -> None:
    group = f"race-{uuid.uuid4().hex[:8]}.example.com"
    for plural, kind in (("apples", "Apple"), ("pears", "Pear")):
        assert api.post(CRD_URL, json=definition(group, plural, kind, shortNames=["fruit"])).status_code == 201
    accepted = [conditions(wait_names_checked(api, f"{plural}.{group}"))["NamesAccepted"]["status"]
                for plural in ("apples", "pears")]
    assert sorted(accepted) == ["False", "True"]
    assert sum("fruit" in short for short in served_names(api, group).values()) == 1


def test_the_same_names_in_another_group_do_not_conflict(api: httpx.Client, group: str) -> None:
    other = f"other-{group}"
    assert api.post(CRD_URL, json=definition(other, "widgets", "Widget", shortNames=["wd"])).status_code == 201
    crd = wait_established(api, f"widgets.{other}")
    assert conditions(crd)["NamesAccepted"]["reason"] == "NoConflicts"
    assert served_names(api, other) == {"widgets": ["wd"]}


@pytest.mark.parametrize("names,field", [
    ({"shortNames": ["Bad_Name"]}, "spec.names.shortNames[0]"),
    ({"singular": "Gadget"}, "spec.names.singular"),
    ({"listKind": "Gadget List"}, "spec.names.listKind"),
    ({"categories": ["a.b"]}, "spec.names.categories[0]"),
])
def test_names_of_an_invalid_form_are_refused(api: httpx.Client, group: str, names: dict, field: str) -> None:
    r = api.post(CRD_URL, json=definition(group, "gadgets", "Gadget", **names))
    assert r.status_code == 422, r.text
    assert field in {c["field"] for c in r.json()["details"]["causes"]}
    assert api.get(f"{CRD_URL}/gadgets.{group}").status_code == 404


def test_a_name_that_is_not_plural_dot_group_is_refused(api: httpx.Client, group: str) -> None:
    body = definition(group, "gadgets", "Gadget")
    body["spec"]["names"]["plural"] = "gizmos"  # the name still says gadgets
    r = api.post(CRD_URL, json=body)
    assert r.status_code == 422, r.text
    assert 'metadata.name: Invalid value: "gadgets.' in r.json()["message"]
    assert 'must be spec.names.plural+"."+spec.group' in r.json()["message"]
    assert api.get(f"{CRD_URL}/gadgets.{group}").status_code == 404


def test_a_list_kind_equal_to_the_kind_is_refused(api: httpx.Client, group: str) -> None:
    r = api.post(CRD_URL, json=definition(group, "gadgets", "Gadget", listKind="Gadget"))
    assert r.status_code == 422, r.text
    assert "spec.names.listKind" in {c["field"] for c in r.json()["details"]["causes"]}


def test_condition_times_move_only_when_a_condition_changes_status() -> None:
    widgets = definition("g.example.com", "widgets", "Widget", singular="widget", listKind="WidgetList",
                         shortNames=["wd"])
    widgets["status"] = naming_status(widgets, [], "t1")
    gadgets = definition("g.example.com", "gadgets", "Gadget", singular="gadget", listKind="GadgetList",
                         shortNames=["wd"])
    refused = naming_status(gadgets, [widgets], "t2")
    again = naming_status({**gadgets, "status": refused}, [widgets], "t3")
    assert again == refused
    accepted = naming_status({**gadgets, "status": refused}, [], "t4")
    times = {c["type"]: c["lastTransitionTime"] for c in accepted["conditions"]}
    assert times == {"NamesAccepted": "t4", "Established": "t4"}
    # once established, a conflicting change of names leaves it established, since t4
    gadgets["spec"]["names"]["shortNames"] = ["gd", "widget"]
    changed = naming_status({**gadgets, "status": accepted}, [widgets], "t5")
    assert {c["type"]: (c["status"], c["lastTransitionTime"]) for c in changed["conditions"]} == {
        "NamesAccepted": ("False", "t5"), "Established": ("True", "t4")}
    assert changed["acceptedNames"]["shortNames"] == ["wd"]
