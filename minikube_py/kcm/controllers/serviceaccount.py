"""The ServiceAccounts controller: a `default` ServiceAccount in every namespace.

Every pod runs as a ServiceAccount, and the ServiceAccount admission plugin refuses a pod whose account does
not exist; a pod that names none gets `default`. So each namespace needs a `default` account from the moment
it exists, and gets it back if someone deletes it. The controller:

* enqueues a namespace's name when the namespace is added or changes, and when a ServiceAccount named
  `default` is deleted from it;
* `sync(namespace)`: if the namespace is active (not being deleted) and has no `default` account in the
  cache, creates one. AlreadyExists means the cache lagged: nothing to do. A namespace being terminated
  refuses the create: nothing to do either.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import DeletedFinalStateUnknown
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext

DEFAULT_ACCOUNT = "default"

log = logging.getLogger(__name__)


class ServiceAccountsController:
    name = "serviceaccount-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.namespaces = ctx.informers.informer_for(resources.NAMESPACES)
        self.accounts = ctx.informers.informer_for(resources.SERVICE_ACCOUNTS)
        self.queue = RateLimitingQueue(name="serviceaccount", clock=ctx.clock)
        self.namespaces.add_event_handler(FuncHandler(on_add=self._enqueue, on_update=lambda _, new: self._enqueue(new)))
        self.accounts.add_event_handler(FuncHandler(on_delete=self._account_deleted))

    async def run(self, workers: int = 1) -> None:
        await asyncio.gather(self.namespaces.wait_for_cache_sync(), self.accounts.wait_for_cache_sync())
        try:
            await run_workers(self.queue, self.sync, workers, name="serviceaccount", logger=log)
        finally:
            self.queue.shut_down()

    def _enqueue(self, namespace: dict[str, Any], *_: Any) -> None:
        self.queue.add(namespace["metadata"]["name"])

    def _account_deleted(self, account: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        if isinstance(account, DeletedFinalStateUnknown):
            account = account.obj
        if account["metadata"]["name"] == DEFAULT_ACCOUNT:
            self.queue.add(account["metadata"]["namespace"])

    async def sync(self, name: str) -> None:
        namespace = self.namespaces.indexer.get_by_key(name)
        if namespace is None or (namespace.get("status") or {}).get("phase") == "Terminating":
            return
        if self.accounts.indexer.get_by_key(f"{name}/{DEFAULT_ACCOUNT}") is not None:
            return
        body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT_ACCOUNT}}
        try:
            await self.client.create(resources.SERVICE_ACCOUNTS, body, name)
        except errors.AlreadyExists:
            return
        except errors.Forbidden as error:
            if not errors.is_namespace_terminating(error):
                raise
