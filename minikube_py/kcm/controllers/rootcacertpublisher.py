"""The root CA publisher: a `kube-root-ca.crt` ConfigMap in every namespace, holding the cluster's CA.

A pod that talks to the apiserver must trust its serving certificate. Every pod's projected
`kube-api-access-*` volume mounts `ca.crt` from the ConfigMap `kube-root-ca.crt` of its namespace, and this
controller keeps that ConfigMap there: created in every active namespace, put back if deleted, and its
`ca.crt` reset if anyone edits it. The CA is the file `--root-ca-file` names, or, without one, the CA the
controller manager itself trusts for the apiserver (its kubeconfig's).

Triggers: a namespace added or changed enqueues it; a `kube-root-ca.crt` ConfigMap changed or deleted
enqueues its namespace. `sync(namespace)` creates the ConfigMap when missing, updates it when its data or
description annotation differ, and otherwise writes nothing.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler
from minikube_py.client.store import DeletedFinalStateUnknown
from minikube_py.client.workqueue import RateLimitingQueue
from minikube_py.kcm.context import ControllerContext

ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")

log = logging.getLogger(__name__)


class RootCACertPublisher:
    name = "root-ca-certificate-publisher-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.root_ca = ctx.settings.root_ca
        self.namespaces = ctx.informers.informer_for(resources.NAMESPACES)
        self.configmaps = ctx.informers.informer_for(resources.CONFIGMAPS)
        self.queue = RateLimitingQueue(name="root_ca_cert_publisher", clock=ctx.clock)
        self.namespaces.add_event_handler(FuncHandler(on_add=self._namespace_changed,
                                                      on_update=lambda _, new: self._namespace_changed(new)))
        self.configmaps.add_event_handler(FuncHandler(on_update=lambda _, new: self._configmap_changed(new),
                                                      on_delete=self._configmap_changed))

    async def run(self, workers: int = 1) -> None:
        await asyncio.gather(self.namespaces.wait_for_cache_sync(), self.configmaps.wait_for_cache_sync())
        try:
            await run_workers(self.queue, self.sync, workers, name="root_ca_cert_publisher", logger=log)
        finally:
            self.queue.shut_down()

    def _namespace_changed(self, namespace: dict[str, Any], *_: Any) -> None:
        self.queue.add(namespace["metadata"]["name"])

    def _configmap_changed(self, configmap: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        if isinstance(configmap, DeletedFinalStateUnknown):
            configmap = configmap.obj
        if configmap["metadata"]["name"] == ROOT_CA_CONFIGMAP:
            self.queue.add(configmap["metadata"]["namespace"])

    async def sync(self, name: str) -> None:
        namespace = self.namespaces.indexer.get_by_key(name)
        if not self.root_ca or namespace is None or namespace["metadata"].get("deletionTimestamp"):
            return
        current = self.configmaps.indexer.get_by_key(f"{name}/{ROOT_CA_CONFIGMAP}")
        try:
            if current is None:
                await self.client.create(resources.CONFIGMAPS, {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": ROOT_CA_CONFIGMAP, "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                    "data": {"ca.crt": self.root_ca}}, name)
                return
            annotations = current["metadata"].get("annotations") or {}
            if current.get("data") == {"ca.crt": self.root_ca} and annotations.get(DESCRIPTION_ANNOTATION) == DESCRIPTION:
                return
            updated = copy.deepcopy(current)
            updated["data"] = {"ca.crt": self.root_ca}
            updated["metadata"]["annotations"] = {**annotations, DESCRIPTION_ANNOTATION: DESCRIPTION}
            await self.client.update(resources.CONFIGMAPS, updated, name)
        except (errors.AlreadyExists, errors.NotFound):
            return  # the cache lagged behind: the event that follows brings the key back
        except errors.Forbidden as error:
            if not errors.is_namespace_terminating(error):
                raise
