"""Test doubles for controller unit tests: a recording client and a context with caches filled by hand.

`RecordingClient` has the methods of `minikube_py.client.rest.RESTClient` that controllers call. Writes are
recorded as `(verb, resource plural, namespace, name)` plus the body, and answered from `objects` (what the
"apiserver" holds), so a test can assert exactly which writes a `sync` made; `get_path` answers from `paths`
(discovery documents, `/scale` of a custom resource). `context()` builds a
`ControllerContext` over it whose informers are never started: tests put objects into the caches with
`cache(ctx, resources.PODS, pod, ...)` and call the controller's `sync` directly.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from dataclasses import dataclass, field
from typing import Any

from minikube_py.api.kinds import Resource
from minikube_py.client import errors
from minikube_py.client.clock import FakeClock
from minikube_py.client.events import EventBroadcaster
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.kcm.context import ControllerContext, ControllerSettings


@dataclass
class Action:
    verb: str
    resource: str
    namespace: str
    name: str
    body: Any = None
    options: dict[str, Any] = field(default_factory=dict)


class RecordingClient:
    def __init__(self) -> None:
        self.actions: list[Action] = []
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}  # (plural, namespace, name) -> object
        self.failures: dict[tuple[str, str], errors.APIStatusError] = {}  # (verb, plural) -> error raised
        self.paths: dict[str, dict[str, Any]] = {}  # URL path -> what get_path answers
        self._uids = itertools.count(1)

    def put(self, resource: Resource, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.objects[(resource.plural, meta.get("namespace", ""), meta["name"])] = obj

    def writes(self, verb: str | None = None) -> list[Action]:
        return [a for a in self.actions if a.verb != "get" and (verb is None or a.verb == verb)]

    def _record(self, action: Action) -> None:
        self.actions.append(action)
        failure = self.failures.get((action.verb, action.resource))
        if failure is not None:
            raise failure

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        self._record(Action("get", resource.plural, namespace or "", name))
        found = self.objects.get((resource.plural, namespace or "", name))
        if found is None:
            raise errors.new_not_found(resource.plural, name)
        return copy.deepcopy(found)

    async def get_path(self, url: str) -> dict[str, Any]:
        self._record(Action("get", url, "", ""))
        found = self.paths.get(url)
        if found is None:
            raise errors.NotFound({"kind": "Status", "code": 404, "reason": "NotFound",
                                   "message": "the server could not find the requested resource"})
        return copy.deepcopy(found)

    async def create(self, resource: Resource, body: dict[str, Any], namespace: str | None = None, *,
                     name: str | None = None, subresource: str | None = None, **options: Any) -> dict[str, Any]:
        created = copy.deepcopy(body)
        meta = created.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{next(self._uids):05d}"
        meta.setdefault("uid", f"uid-{next(self._uids)}")
        plural = f"{resource.plural}/{subresource}" if subresource else resource.plural
        self._record(Action("create", plural, namespace or "", name or meta.get("name", ""), created,
                                   options))
        return created

    async def update(self, resource: Resource, body: dict[str, Any], namespace: str | None = None, *,
                     subresource: str | None = None, **options: Any) -> dict[str, Any]:
        plural = f"{resource.plural}/{subresource}" if subresource else resource.plural
        self._record(Action("update", plural, namespace or "", body["metadata"]["name"],
                                   copy.deepcopy(body), options))
        return copy.deepcopy(body)

    async def patch(self, resource: Resource, name: str, body: Any, namespace: str | None = None, *,
                    subresource: str | None = None, **options: Any) -> dict[str, Any]:
        plural = f"{resource.plural}/{subresource}" if subresource else resource.plural
        self._record(Action("patch", plural, namespace or "", name, copy.deepcopy(body), options))
        return {"metadata": {"name": name, "namespace": namespace or ""}}

    async def delete(self, resource: Resource, name: str, namespace: str | None = None,
                     **options: Any) -> dict[str, Any]:
        self._record(Action("delete", resource.plural, namespace or "", name, None, options))
        return {"kind": "Status", "status": "Success"}


def context(settings: ControllerSettings | None = None) -> tuple[ControllerContext, RecordingClient, FakeClock]:
    client = RecordingClient()
    clock = FakeClock()
    recorder = EventBroadcaster(client, clock).new_core_recorder("test-controller")  # type: ignore[arg-type]
    ctx = ControllerContext(client=client, recorder=recorder,  # type: ignore[arg-type]
                            informers=SharedInformerFactory(client),  # type: ignore[arg-type]
                            settings=settings or ControllerSettings(), clock=clock)
    return ctx, client, clock


def cache(ctx: ControllerContext, resource: Resource, *objects: dict[str, Any]) -> None:
    """Put `objects` in the (never started) informer cache of `resource`, which then counts as synced."""
    informer = ctx.informers.informer_for(resource)
    for obj in objects:
        informer.indexer.add(obj)
    informer._mark_synced()  # the test plays the reflector's first list


class FakeRecorder:
    """Keeps `(type, reason, message)` of every event instead of sending it."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        assert obj.get("kind") and obj.get("apiVersion"), "an event needs the object's kind and apiVersion"
        self.events.append((type, reason, message))

    def reasons(self) -> list[str]:
        return [reason for _, reason, _ in self.events]


class CreateBatches:
    """Watches the creates of `plural` on a RecordingClient to see a slow start: each create yields to the event
    loop once, so the creates one `asyncio.gather` starts are all in flight together. `sizes` lists how many
    were in each such batch; creates from the `fail_from`-th on (counting from 1) raise `error`."""

    def __init__(self, client: RecordingClient, plural: str, fail_from: int | None = None,
                 error: errors.APIStatusError | None = None) -> None:
        self.sizes: list[int] = []
        self._in_flight = 0
        self._count = 0
        create = client.create

        async def watched(resource: Resource, body: dict[str, Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
            if resource.plural != plural:
                return await create(resource, body, *args, **kwargs)
            if self._in_flight == 0:
                self.sizes.append(0)
            self.sizes[-1] += 1
            self._count += 1
            number = self._count
            self._in_flight += 1
            await asyncio.sleep(0)
            self._in_flight -= 1
            if fail_from is not None and number >= fail_from:
                raise error or errors.Forbidden({"message": "refused"})
            return await create(resource, body, *args, **kwargs)

        client.create = watched  # type: ignore[method-assign]
