"""A controller of your own (lab 6): each Namespace labelled `team=NAME` gets a ConfigMap `team-info`.

    python docs/labs/controllers/teaminfo.py --kubeconfig "$(mkpy kubeconfig)"

The shape is the one of every controller in minikube_py/kcm/controllers: informers keep a cache of what it
reads (namespaces, and the ConfigMaps it writes), their handlers only put a namespace's name on a work queue,
and `sync(name)` compares what is with what should be and writes the difference. It never asks "what
happened?", only "what should there be now?", so a missed event, a restart or someone deleting its
ConfigMap all end the same way: the next sync puts things right.
"""

import argparse
import asyncio
import logging

from minikube_py.client import errors, resources
from minikube_py.client.controller import run_workers
from minikube_py.client.informer import FuncHandler, SharedInformerFactory
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.rest import RESTClient
from minikube_py.client.store import DeletedFinalStateUnknown
from minikube_py.client.workqueue import RateLimitingQueue

LABEL, CONFIG_MAP = "team", "team-info"
log = logging.getLogger("teaminfo")


class TeamInfoController:
    def __init__(self, client: RESTClient, informers: SharedInformerFactory) -> None:
        self.client = client
        self.namespaces = informers.informer_for(resources.NAMESPACES)
        # only the ConfigMaps we write: the apiserver filters the list and the watch by name
        self.config_maps = informers.informer_for(resources.CONFIGMAPS,
                                                  field_selector=f"metadata.name={CONFIG_MAP}")
        self.queue = RateLimitingQueue(name="teaminfo")
        self.namespaces.add_event_handler(FuncHandler(on_add=self.enqueue,
                                                      on_update=lambda old, new: self.enqueue(new)))
        self.config_maps.add_event_handler(FuncHandler(on_update=lambda old, new: self.enqueue(new),
                                                       on_delete=self.enqueue))

    def enqueue(self, obj: dict | DeletedFinalStateUnknown) -> None:
        """A handler only says which namespace to look at (a ConfigMap: its namespace)."""
        meta = (obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj)["metadata"]
        self.queue.add(meta.get("namespace") or meta["name"])

    async def run(self, workers: int = 2) -> None:
        await asyncio.gather(self.namespaces.wait_for_cache_sync(), self.config_maps.wait_for_cache_sync())
        await run_workers(self.queue, self.sync, workers, name="teaminfo", logger=log)

    async def sync(self, name: str) -> None:
        namespace = self.namespaces.indexer.get_by_key(name)
        if namespace is None or namespace.get("status", {}).get("phase") == "Terminating":
            return  # gone or going: its ConfigMaps go with it
        team = (namespace["metadata"].get("labels") or {}).get(LABEL)
        current = self.config_maps.indexer.get_by_key(f"{name}/{CONFIG_MAP}")
        if team is None:
            if current is not None:
                log.info("deleting ConfigMap %s/%s: the namespace has no %s label", name, CONFIG_MAP, LABEL)
                try:
                    await self.client.delete(resources.CONFIGMAPS, CONFIG_MAP, name)
                except errors.NotFound:
                    pass  # already gone
        elif current is None:
            log.info("creating ConfigMap %s/%s for team %s", name, CONFIG_MAP, team)
            config_map = {"metadata": {"name": CONFIG_MAP}, "data": {LABEL: team}}
            await self.client.create(resources.CONFIGMAPS, config_map, name)
        elif current.get("data") != {LABEL: team}:
            log.info("updating ConfigMap %s/%s to team %s", name, CONFIG_MAP, team)
            # objects from the cache are shared: change a copy. A stale resourceVersion raises Conflict,
            # and the worker loop puts the key back on the queue with a backoff.
            await self.client.update(resources.CONFIGMAPS, {**current, "data": {LABEL: team}}, name)


async def main() -> None:
    parser = argparse.ArgumentParser(description="Copy each namespace's team label into a ConfigMap.")
    parser.add_argument("--kubeconfig", required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s] %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not every request, only what we decide
    async with RESTClient(load_kubeconfig(args.kubeconfig)) as client:
        informers = SharedInformerFactory(client)
        controller = TeamInfoController(client, informers)
        informers.start()
        log.info("watching namespaces and ConfigMaps %s", CONFIG_MAP)
        try:
            await controller.run()
        finally:
            await informers.stop()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
