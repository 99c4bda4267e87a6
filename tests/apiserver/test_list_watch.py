"""Lists (selectors, paging, resourceVersion rules) and watches (events, selectors, bookmarks, 410)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.apiserver.test_rest import configmap, pod, pods_url


def names(body: dict) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]


@pytest.fixture()
def labeled(api: httpx.Client, namespace: str) -> str:
    for name, labels in (("a", {"tier": "web", "env": "prod"}), ("b", {"tier": "web"}),
                         ("c", {"tier": "db", "env": "dev"}), ("d", {})):
        assert api.post(pods_url(namespace), json=pod(name, labels)).status_code == 201
    return namespace


@pytest.mark.parametrize("selector,expected", [
    ("tier=web", ["a", "b"]),
    ("tier==web", ["a", "b"]),
    ("tier!=web", ["c", "d"]),
    ("tier in (db,cache)", ["c"]),
    ("tier notin (web)", ["c", "d"]),
    ("env", ["a", "c"]),
    ("!env", ["b", "d"]),
    ("tier=web,env=prod", ["a"]),
    ("", ["a", "b", "c", "d"]),
])
def test_label_selector_operators(api: httpx.Client, labeled: str, selector: str, expected: list[str]) -> None:
    body = api.get(pods_url(labeled), params={"labelSelector": selector}).json()
    assert names(body) == expected


@pytest.mark.parametrize("selector,expected", [
    ("metadata.name=b", ["b"]),
    ("metadata.name!=b", ["a", "c", "d"]),
    ("spec.nodeName=", ["a", "b", "c", "d"]),
    ("status.phase=Pending,metadata.name!=a", ["b", "c", "d"]),
])
def test_field_selectors(api: httpx.Client, labeled: str, selector: str, expected: list[str]) -> None:
    assert names(api.get(pods_url(labeled), params={"fieldSelector": selector}).json()) == expected


def test_list_across_namespaces(api: httpx.Client, labeled: str) -> None:
    body = api.get("/api/v1/pods", params={"labelSelector": "tier=db"}).json()
    assert ("c", labeled) in {(p["metadata"]["name"], p["metadata"]["namespace"]) for p in body["items"]}


def test_paging_with_limit_and_continue_sees_one_snapshot(api: httpx.Client, namespace: str) -> None:
    # secrets: every namespace soon gets a ConfigMap of its own (kube-root-ca.crt), but no Secret
    url = f"/api/v1/namespaces/{namespace}/secrets"
    for i in range(5):
        api.post(url, json={"metadata": {"name": f"cm-{i}"}})
    first = api.get(url, params={"limit": 2}).json()
    assert names(first) == ["cm-0", "cm-1"]
    assert first["metadata"]["remainingItemCount"] == 3
    api.post(url, json={"metadata": {"name": "cm-9"}})  # after the snapshot: must not show up in later pages
    seen = names(first)
    token = first["metadata"]["continue"]
    while token:
        page = api.get(url, params={"limit": 2, "continue": token}).json()
        seen += names(page)
        token = page["metadata"].get("continue")
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert seen == [f"cm-{i}" for i in range(5)]


def test_paging_with_a_selector_fills_pages(api: httpx.Client, labeled: str) -> None:
    page = api.get(pods_url(labeled), params={"limit": 1, "labelSelector": "tier=web"}).json()
    assert names(page) == ["a"] and page["metadata"]["continue"]
    rest = api.get(pods_url(labeled), params={"limit": 5, "labelSelector": "tier=web",
                                              "continue": page["metadata"]["continue"]}).json()
    assert names(rest) == ["b"] and not rest["metadata"].get("continue")


def test_list_at_exact_old_revision(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(url, json=configmap("old"))
    rv = api.get(url).json()["metadata"]["resourceVersion"]
    api.post(url, json=configmap("new"))
    mine = {"fieldSelector": "metadata.name!=kube-root-ca.crt"}  # that one arrives with the namespace
    past = api.get(url, params={"resourceVersion": rv, "resourceVersionMatch": "Exact", **mine}).json()
    assert names(past) == ["old"]
    # resourceVersion "0" is whatever the watch cache holds, which may trail the last write (as in kube).
    deadline = time.monotonic() + 10
    while (latest := names(api.get(url, params={"resourceVersion": "0", **mine}).json())) != ["new", "old"]:
        assert time.monotonic() < deadline, latest
        time.sleep(0.02)


def test_future_resource_version_is_a_timeout(api: httpx.Client, namespace: str) -> None:
    r = api.get(pods_url(namespace), params={"resourceVersion": "999999999"})
    assert r.status_code == 504 and "Too large resource version" in r.json()["message"]


class Watcher:
    """Reads a watch stream on a thread and collects its events."""

    def __init__(self, client: httpx.Client, url: str, params: dict[str, str]) -> None:
        self.events: list[dict] = []
        self.ready = threading.Event()
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, args=(client, url, params), daemon=True)
        self._thread.start()
        assert self.ready.wait(10), "watch did not start"

    def _run(self, client: httpx.Client, url: str, params: dict[str, str]) -> None:
        try:
            with client.stream("GET", url, params={**params, "watch": "true"}) as response:
                self.status = response.status_code
                self.ready.set()
                for line in response.iter_lines():
                    if line:
                        with self._cond:
                            self.events.append(json.loads(line))
                            self._cond.notify_all()
        except httpx.TransportError:
            pass  # the test is over and its server or client went away mid-stream

    def wait_for(self, count: int, timeout: float = 10) -> list[dict]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.events) >= count, timeout), self.events
            return list(self.events)

    def join(self, timeout: float = 10) -> None:
        self._thread.join(timeout)


def summary(events: list[dict]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


@pytest.fixture()
def watch_client(control_plane) -> Iterator[httpx.Client]:
    with control_plane.client() as client:
        yield client


def test_watch_from_a_resource_version_sees_changes_in_order(api: httpx.Client, watch_client: httpx.Client,
                                                               namespace: str) -> None:
    rv = api.get(pods_url(namespace)).json()["metadata"]["resourceVersion"]
    watcher = Watcher(watch_client, pods_url(namespace), {"resourceVersion": rv, "timeoutSeconds": "10"})
    created = api.post(pods_url(namespace), json=pod("w")).json()
    created["metadata"]["labels"] = {"x": "1"}
    api.put(pods_url(namespace, "w"), json=created)
    api.delete(pods_url(namespace, "w"))
    events = watcher.wait_for(3)
    assert summary(events) == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]
    revisions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert revisions == sorted(revisions) and len(set(revisions)) == 3


def test_watch_from_zero_starts_with_synthetic_added(api: httpx.Client, watch_client: httpx.Client,
                                                     labeled: str) -> None:
    watcher = Watcher(watch_client, pods_url(labeled), {"resourceVersion": "0", "timeoutSeconds": "5"})
    events = watcher.wait_for(4)
    assert sorted(summary(events)) == [("ADDED", n) for n in "abcd"]


def test_watch_selector_turns_label_changes_into_added_and_deleted(api: httpx.Client, watch_client: httpx.Client,
                                                                   namespace: str) -> None:
    rv = api.post(pods_url(namespace), json=pod("s", {"tier": "db"})).json()["metadata"]["resourceVersion"]
    watcher = Watcher(watch_client, pods_url(namespace),
                      {"resourceVersion": rv, "labelSelector": "tier=web", "timeoutSeconds": "10"})
    live = api.get(pods_url(namespace, "s")).json()
    live["metadata"]["labels"] = {"tier": "web"}
    live = api.put(pods_url(namespace, "s"), json=live).json()
    live["metadata"]["labels"] = {"tier": "db"}
    api.put(pods_url(namespace, "s"), json=live)
    assert summary(watcher.wait_for(2)) == [("ADDED", "s"), ("DELETED", "s")]


def test_watch_with_timeout_ends_the_stream(watch_client: httpx.Client, namespace: str) -> None:
    watcher = Watcher(watch_client, pods_url(namespace), {"timeoutSeconds": "1"})
    watcher.join(10)
    assert watcher.status == 200


def test_watch_bookmarks_when_allowed(api: httpx.Client, watch_client: httpx.Client, namespace: str) -> None:
    rv = api.get(pods_url(namespace)).json()["metadata"]["resourceVersion"]
    watcher = Watcher(watch_client, pods_url(namespace), {"resourceVersion": rv, "allowWatchBookmarks": "true",
                                                          "timeoutSeconds": "20"})
    events = watcher.wait_for(1, timeout=20)  # etcd's progress notify interval in tests is 5 s
    assert events[0]["type"] == "BOOKMARK"
    assert events[0]["object"]["kind"] == "Pod" and int(events[0]["object"]["metadata"]["resourceVersion"]) >= int(rv)


def test_table_watch_sends_columns_once(api: httpx.Client, watch_client: httpx.Client, namespace: str) -> None:
    rv = api.get(pods_url(namespace)).json()["metadata"]["resourceVersion"]
    table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    watch_client.headers["Accept"] = table_accept
    watcher = Watcher(watch_client, pods_url(namespace), {"resourceVersion": rv, "timeoutSeconds": "10"})
    api.post(pods_url(namespace), json=pod("t1"))
    api.post(pods_url(namespace), json=pod("t2"))
    first, second = watcher.wait_for(2)[:2]
    assert first["object"]["kind"] == "Table" and first["object"]["columnDefinitions"]
    assert second["object"]["columnDefinitions"] == []
    assert second["object"]["rows"][0]["cells"][0] == "t2"
