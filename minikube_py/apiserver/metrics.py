"""metrics.k8s.io/v1beta1 in the apiserver: how much CPU and memory nodes and pods use (`kubectl top`).

In a real cluster this API is metrics-server's, which kube-apiserver's aggregation layer proxies to (an
APIService). mkpy has no aggregation layer, so the apiserver answers it itself (docs/architecture.md):

    GET /apis/metrics.k8s.io/v1beta1/nodes[/{name}]                             NodeMetrics(List)
    GET /apis/metrics.k8s.io/v1beta1[/namespaces/{namespace}]/pods[/{name}]     PodMetrics(List)

A request reads the Nodes or Pods from the registry (a list with its label selector and a field selector
on `metadata.name`/`metadata.namespace`, all metrics-server takes), then asks the kubelet of each Ready node
concerned for its stats Summary (`GET /stats/summary`, kubelet/stats.py) with the kubelet client
nodeproxy.py proxies logs and exec with. Writes and watches are 405 MethodNotAllowed. Authorization already
happened in the handler chain: get or list on `nodes` or `pods` in group metrics.k8s.io, which the bootstrap
role system:aggregated-metrics-reader grants to view, edit and admin.

Scraping on request, not on a timer. metrics-server scrapes every node every 15 s whether anyone asks or
not; here an idle cluster (a hundred simulated nodes, say) costs nothing, and the request pays instead: it
scrapes the nodes it needs concurrently, each within SCRAPE_TIMEOUT, so a kubelet that does not answer
delays the answer by that much at most. Such a node is left out of lists, and a GET of it (or of a pod on
it) is NotFound, as metrics-server answers for a node it could not scrape.

CPU use is a rate, and the kubelet reports each container's cumulative CPU time (`usageCoreNanoSeconds`):
the usage is its growth between two samples over the time between them, computed here as metrics-server
does. The apiserver keeps each node's last two samples (a `Window`). A request reuses them if the later is
under MIN_WINDOW old; else it takes a new sample and pairs it with the last one if that is at most
MAX_WINDOW old; else (the first request, or one after a quiet spell) it takes two samples MIN_WINDOW apart.
A container found in only the later sample (just started or restarted) has no rate yet, so its pod is left
out until a later request, as metrics-server leaves a pod out until it has two points for it. `window` is
the time between the samples, `timestamp` when the later one was taken, memory the later working set. A
node's CPU is the sum of its containers' (the kubelet's node figures are that sum too, and a sum of rates
stays right when containers come and go between the samples).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ..api import errors
from ..api.gofmt import go_duration
from ..api.kinds import Resource
from ..api.metrics import API_VERSION, GROUP, VERSION, metrics_list, node_metrics, pod_metrics
from ..api.printers.format import condition_status
from ..api.selectors import FieldSelector, LabelSelector
from ..api.timestamps import time_string
from . import negotiation, responses
from .nodeproxy import NodeProxy, kubelet_endpoint
from .registry.generic import ResourceStore
from .registry.listing import ListOptions
from .request import RequestInfo, query_params, request_info

log = logging.getLogger(__name__)

SCRAPE_TIMEOUT = 5.0  # seconds for one node's samples, both of them when two are taken
MIN_WINDOW = 1.0  # seconds: the shortest window a rate is computed over
MAX_WINDOW = 30.0  # seconds: an older sample is too stale to pair with a new one

# (nanocores, memory working set bytes) of each container by (pod uid, container name)
ContainerUsage = dict[tuple[str, str], tuple[int, int]]


@dataclass(frozen=True)
class Sample:
    """One node's stats Summary, read at `taken` (`time.monotonic()`), which `timestamp` says in UTC."""

    taken: float
    timestamp: str
    summary: dict[str, Any]

    @functools.cached_property
    def pods(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Each container's stats by pod uid and container name."""
        return {(pod.get("podRef") or {}).get("uid", ""): {c.get("name", ""): c for c in pod.get("containers") or []}
                for pod in self.summary.get("pods") or []}


@dataclass(frozen=True)
class Window:
    """Two samples of one node, MIN_WINDOW to MAX_WINDOW apart: what usage is measured over."""

    earlier: Sample
    later: Sample

    @property
    def seconds(self) -> float:
        return self.later.taken - self.earlier.taken

    @functools.cached_property
    def container_usage(self) -> ContainerUsage:
        """Every container found in both samples whose CPU time did not start again from zero."""
        found: ContainerUsage = {}
        for uid, containers in self.later.pods.items():
            before = self.earlier.pods.get(uid, {})
            for name, now in containers.items():
                used = _cpu_time(now) - _cpu_time(before[name]) if name in before else -1
                if used >= 0:
                    found[(uid, name)] = (round(used / self.seconds), _working_set(now))
        return found

    def node_usage(self) -> tuple[int, int]:
        return sum(cpu for cpu, _ in self.container_usage.values()), _working_set(self.later.summary.get("node") or {})

    def pod_usage(self, uid: str) -> list[tuple[str, int, int]] | None:
        """(name, nanocores, memory bytes) of each of the pod's containers; None while one has no rate."""
        names = list(self.later.pods.get(uid, {}))
        if not names or any((uid, name) not in self.container_usage for name in names):
            return None
        return [(name, *self.container_usage[(uid, name)]) for name in names]

    def describe(self) -> dict[str, str]:
        return {"timestamp": self.later.timestamp, "window": go_duration(round(self.seconds, 3))}


def _cpu_time(stats: dict[str, Any]) -> int:
    return int((stats.get("cpu") or {}).get("usageCoreNanoSeconds") or 0)


def _working_set(stats: dict[str, Any]) -> int:
    return int((stats.get("memory") or {}).get("workingSetBytes") or 0)


def _ready(node: dict[str, Any]) -> bool:
    return condition_status((node.get("status") or {}).get("conditions"), "Ready") == "True"


class MetricsAPI:
    """The routes, and each node's last Window; `server` is the APIServer (registry and stores), `kubelets`
    its NodeProxy (the kubelet client)."""

    def __init__(self, server: Any, kubelets: NodeProxy) -> None:
        self.server = server
        self.kubelets = kubelets
        self._windows: dict[str, Window] = {}

    def routes(self) -> list[BaseRoute]:
        # `/apis/metrics.k8s.io/v1beta1/` itself is discovery's
        return [Route(f"/apis/{API_VERSION}/{{first}}", self.handle, methods=_METHODS),
                Route(f"/apis/{API_VERSION}/{{first}}/{{rest:path}}", self.handle, methods=_METHODS)]

    async def handle(self, request: Request) -> Response:
        query = query_params(request.scope)
        try:
            info = request_info(request.scope)
            res = self._resource(info)
            if info.verb not in res.verbs:
                raise errors.method_not_allowed(info.verb)
            found = await (self._get(info) if info.name else self._list(res, info.namespace, query))
        except errors.APIError as err:
            return responses.error_response(err)
        if negotiation.wants_table(request.headers.get("accept", "")):
            include = responses.include_object_param(query.get("includeObject"))
            return responses.json_response(responses.table(res, found["items"] if not info.name else [found],
                                                           include, list_rv=None))
        return responses.json_response(found)

    def _resource(self, info: RequestInfo | None) -> Resource:
        """The metrics resource a URL names; 404 for any other URL under the group-version."""
        res = self.server.registry.lookup(GROUP, VERSION, info.resource) if info is not None else None
        if info is None or res is None or info.subresource or not info.parts_valid:
            raise errors.route_not_found()
        if info.namespace and not res.namespaced or info.name and res.namespaced and not info.namespace:
            raise errors.route_not_found()  # .../namespaces/x/nodes, .../pods/y
        return res

    def _store(self, plural: str) -> ResourceStore:
        """The core store of the measured objects: `nodes` or `pods`, as the metrics resources are named."""
        store: ResourceStore = self.server.stores[("", "v1", plural)]
        return store

    # reads ----------------------------------------------------------------------------------------

    async def _list(self, res: Resource, namespace: str, query: dict[str, str]) -> dict[str, Any]:
        options = ListOptions(LabelSelector.parse(query.get("labelSelector", "")),
                              FieldSelector.parse(query.get("fieldSelector", ""), res))
        objects = (await self._store(res.plural).list(namespace, options)).objects
        if res.plural == "nodes":
            return metrics_list(res.kind, await self._node_metrics(objects))
        return metrics_list(res.kind, await self._pod_metrics(objects))

    async def _get(self, info: RequestInfo) -> dict[str, Any]:
        """One NodeMetrics or PodMetrics; NotFound worded as metrics-server words it."""
        if info.resource == "nodes":
            try:
                node = await self._store("nodes").get("", info.name)
            except errors.APIError as err:
                raise errors.not_found("node", info.name) if err.code == 404 else err from None
            found = await self._node_metrics([node])
            what, name = "nodemetrics", info.name
        else:
            found = await self._pod_metrics([await self._store("pods").get(info.namespace, info.name)])
            what, name = "podmetrics", f"{info.namespace}/{info.name}"
        if not found:
            raise errors.not_found(f"{what}.{GROUP}", name)
        return found[0]

    async def _node_metrics(self, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        windows = await self._windows_of(nodes)
        created = time_string()
        found = []
        for node in nodes:
            window = windows.get(node["metadata"]["name"])
            if window is not None:
                found.append(node_metrics(node, *window.node_usage(), **window.describe(), created=created))
        return found

    async def _pod_metrics(self, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # a pod whose containers have ended uses nothing: metrics-server hears only of running containers
        pods = [pod for pod in pods if pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")]
        on = {pod.get("spec", {}).get("nodeName") for pod in pods} - {None, ""}
        nodes = [node for node in (await self._store("nodes").list("", _EVERYTHING)).objects
                 if node["metadata"]["name"] in on]
        windows = await self._windows_of(nodes)
        created = time_string()
        found = []
        for pod in pods:
            window = windows.get(pod.get("spec", {}).get("nodeName", ""))
            containers = window.pod_usage(pod["metadata"].get("uid", "")) if window is not None else None
            if window is not None and containers is not None:
                found.append(pod_metrics(pod, containers, **window.describe(), created=created))
        return found

    # scraping -------------------------------------------------------------------------------------

    async def _windows_of(self, nodes: list[dict[str, Any]]) -> dict[str, Window]:
        """The Window of each Ready node whose kubelet answered, scraped concurrently."""
        ready = [node for node in nodes if _ready(node)]
        async with self.kubelets.kubelet_client(httpx.Timeout(SCRAPE_TIMEOUT)) as client:
            windows = await asyncio.gather(*(self._window(client, node) for node in ready))
        now = time.monotonic()
        self._windows = {name: w for name, w in self._windows.items() if now - w.later.taken <= MAX_WINDOW}
        return {node["metadata"]["name"]: w for node, w in zip(ready, windows, strict=True) if w is not None}

    async def _window(self, client: httpx.AsyncClient, node: dict[str, Any]) -> Window | None:
        name = node["metadata"]["name"]
        try:
            async with asyncio.timeout(SCRAPE_TIMEOUT):
                return await self._sampled(client, node)
        except (httpx.HTTPError, errors.APIError, TimeoutError, ValueError) as err:
            log.info("no metrics for node %s: %s", name, str(err) or type(err).__name__)
            return None

    async def _sampled(self, client: httpx.AsyncClient, node: dict[str, Any]) -> Window:
        """The node's Window: the last one while it is fresh, else one ending with a new sample."""
        name = node["metadata"]["name"]
        known = self._windows.get(name)
        if known is not None and time.monotonic() - known.later.taken < MIN_WINDOW:
            return known
        sample = await self._sample(client, node)
        known = self._windows.get(name)  # another request may have sampled the node meanwhile
        if known is None or sample.taken - known.later.taken > MAX_WINDOW:
            await asyncio.sleep(MIN_WINDOW)
            window = Window(sample, await self._sample(client, node))
        elif sample.taken - known.later.taken < MIN_WINDOW:
            return known
        else:
            window = Window(known.later, sample)
        self._windows[name] = window
        return window

    async def _sample(self, client: httpx.AsyncClient, node: dict[str, Any]) -> Sample:
        response = await client.get(kubelet_endpoint(node) + "/stats/summary")
        response.raise_for_status()
        summary = response.json()
        if not isinstance(summary, dict):
            raise ValueError("the answer is no stats Summary")
        return Sample(time.monotonic(), time_string(), summary)


_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
_EVERYTHING = ListOptions(LabelSelector.parse(""), FieldSelector.parse(""))
