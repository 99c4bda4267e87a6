"""Assembling and running a scheduler process (kube's `cmd/kube-scheduler/app`): `mkpy scheduler` ends here.

    config file ─► profiles ─► one Framework per profile (its plugins, its event recorder)
    kubeconfig  ─► RESTClient ─► shared informers (pods, nodes, the kinds plugins list or want events of)
                                   │ eventhandlers.py
                                   ▼
                       cache ─► snapshot      queue (sorted by the QueueSort plugin, PreEnqueue gates,
                                              requeued on the cluster events plugins registered)
                                   ▼
                      Scheduler.run(): one pod at a time (scheduler.py)

With leader election on (the default) only the holder of the `kube-system/kube-scheduler` Lease schedules;
the others wait, so several schedulers can run for availability. /healthz answers from the start.

Usage rules: everything is built before the first API call, so a bad config or kubeconfig fails at once with
a one-line error (`SchedulerSetupError`); losing the lease ends the process, as in kube, and whatever
supervises it starts a fresh one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
from dataclasses import dataclass
from typing import Any

from minikube_py import heap
from minikube_py.client import resources
from minikube_py.client.events import EventBroadcaster
from minikube_py.client.healthz import HealthServer, HealthServerError
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.kubeconfig import ConfigError as KubeconfigError
from minikube_py.client.kubeconfig import load_kubeconfig, user_agent
from minikube_py.client.leaderelection import LeaderElectionConfig, run_as_leader
from minikube_py.client.rest import RESTClient
from minikube_py.scheduler import explain
from minikube_py.scheduler.cache import Cache
from minikube_py.scheduler.eventhandlers import EventHandlers
from minikube_py.scheduler.framework import config as scheduler_config
from minikube_py.scheduler.framework.runtime import Framework
from minikube_py.scheduler.framework.waiting import WaitingPods
from minikube_py.scheduler.nominator import Nominator
from minikube_py.scheduler.queue import SchedulingQueue
from minikube_py.scheduler.scheduler import Scheduler
from minikube_py.scheduler.snapshot import Snapshot

log = logging.getLogger("mkpy.scheduler")


class SchedulerSetupError(Exception):
    """The scheduler cannot start: bad config, bad kubeconfig, a plugin refusing its args."""


@dataclass
class Options:
    """What `mkpy scheduler`'s flags say; None means "as the config file says"."""

    kubeconfig: str = ""
    config_file: str = ""
    leader_elect: bool | None = None
    lease_duration: float | None = None
    renew_deadline: float | None = None
    retry_period: float | None = None
    resource_name: str | None = None
    resource_namespace: str | None = None
    bind_address: str = "0.0.0.0"
    secure_port: int = 10259
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    explain: bool = False


def load_configuration(options: Options) -> scheduler_config.SchedulerConfiguration:
    try:
        if options.config_file:
            return scheduler_config.load_file(options.config_file)
        return scheduler_config.default_configuration()
    except scheduler_config.ConfigError as error:
        raise SchedulerSetupError(f"invalid scheduler configuration: {error}") from None


def leader_election(options: Options, config: scheduler_config.SchedulerConfiguration) -> LeaderElectionConfig | None:
    """The Lease to hold, flags overriding the config file; None when leader election is off."""
    from_file = config.leader_election
    if not (options.leader_elect if options.leader_elect is not None else from_file.leader_elect):
        return None
    def pick(flag: Any, configured: Any) -> Any:
        return flag if flag is not None else configured
    try:
        return LeaderElectionConfig(
            lease_name=pick(options.resource_name, from_file.resource_name),
            lease_namespace=pick(options.resource_namespace, from_file.resource_namespace),
            identity=f"{socket.gethostname()}_{os.getpid()}",
            lease_duration=pick(options.lease_duration, from_file.lease_duration),
            renew_deadline=pick(options.renew_deadline, from_file.renew_deadline),
            retry_period=pick(options.retry_period, from_file.retry_period),
        )
    except ValueError as error:
        raise SchedulerSetupError(f"invalid leader election settings: {error}") from None


def build(options: Options, config: scheduler_config.SchedulerConfiguration, client: RESTClient,
          identity: str) -> tuple[Scheduler, SharedInformerFactory, EventBroadcaster]:
    """Every part of the scheduler, wired together but not started."""
    informers = SharedInformerFactory(client)
    broadcaster = EventBroadcaster(client)
    snapshot, cache, nominator, waiting = Snapshot(), Cache(), Nominator(), WaitingPods()
    frameworks: dict[str, Framework] = {}
    try:
        for profile in config.profiles:
            recorder = broadcaster.new_recorder(profile.scheduler_name, identity)
            frameworks[profile.scheduler_name] = Framework(
                profile, config.registry, snapshot=snapshot, client=client, informers=informers,
                event_recorder=recorder, nominator=nominator, waiting_pods=waiting)
    except scheduler_config.ConfigError as error:
        raise SchedulerSetupError(f"invalid scheduler configuration: {error}") from None
    first = next(iter(frameworks.values()))
    hints: dict[str, list[Any]] = {}
    for fwk in frameworks.values():
        hints.update(fwk.events_to_register())
    namespaces = informers.lister(resources.NAMESPACES)
    queue = SchedulingQueue(
        first.queue_sort_less, pre_enqueue={name: fwk.run_pre_enqueue_plugins for name, fwk in frameworks.items()},
        queueing_hints=hints, pod_initial_backoff=config.pod_initial_backoff_seconds,
        pod_max_backoff=config.pod_max_backoff_seconds, nominator=nominator,
        namespace_labels=lambda name: _labels(namespaces, name))
    pods = informers.informer_for(resources.PODS)
    handlers = EventHandlers(cache, queue, frameworks, on_pod_deleted=lambda pod: _reject_waiting(first, pod))
    handlers.register(pods, informers.informer_for(resources.NODES))
    handlers.register_cluster_events(informers, [event for events in hints.values() for event in events])
    scheduler = Scheduler(client=client, cache=cache, queue=queue, snapshot=snapshot, profiles=frameworks,
                          pod_lister=pods.lister(), percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
                          explain=explain.ExplainRecorder if options.explain else None)
    return scheduler, informers, broadcaster


def _labels(namespaces: Any, name: str) -> dict[str, str] | None:
    try:
        return (namespaces.get(name).get("metadata") or {}).get("labels") or {}
    except Exception:
        return None


def _reject_waiting(fwk: Framework, pod: dict[str, Any]) -> None:
    fwk.reject_waiting_pod((pod.get("metadata") or {}).get("uid", ""))


async def run(options: Options) -> None:
    """Run the scheduler until cancelled or the lease is lost."""
    config = load_configuration(options)
    election = leader_election(options, config)
    try:
        client_config = load_kubeconfig(options.kubeconfig or config.client_connection.kubeconfig or None)
    except KubeconfigError as error:
        raise SchedulerSetupError(str(error)) from None
    client_config = dataclasses.replace(client_config, user_agent=user_agent("kube-scheduler"))
    identity = election.identity if election else socket.gethostname()
    health = HealthServer(options.bind_address, options.secure_port, cert_file=options.tls_cert_file,
                          key_file=options.tls_private_key_file)
    # the Lease is renewed over a client of its own (kube's separate leader-election clientset): a burst of
    # binds queued on the main client must never delay a renewal past the deadline
    election_config = dataclasses.replace(client_config, user_agent=user_agent("kube-scheduler/leader-election"))
    async with RESTClient(client_config) as client, RESTClient(election_config) as election_client:
        scheduler, informers, broadcaster = build(options, config, client, identity)
        if options.secure_port:
            try:
                await health.start()
            except HealthServerError as error:
                raise SchedulerSetupError(str(error)) from None
        try:
            await run_as_leader(election_client, election, lambda: _schedule(scheduler, informers, broadcaster),
                                logger=log)
        finally:
            await health.stop()


async def _schedule(scheduler: Scheduler, informers: SharedInformerFactory, broadcaster: EventBroadcaster) -> None:
    broadcaster.start_recording_to_sink()
    informers.start()
    try:
        await informers.wait_for_cache_sync()
        # The snapshot's first copy holds every node (~30 ms at 5000 nodes): made now, not in the first pod's cycle.
        scheduler.cache.update_snapshot(scheduler.snapshot)
        heap.settle()  # the synced caches and the snapshot live as long as the process
        log.info("caches synced; scheduling")
        async with asyncio.TaskGroup() as group:
            group.create_task(scheduler.queue.run())
            group.create_task(scheduler.run())
    finally:
        scheduler.queue.close()
        with contextlib.suppress(Exception):
            await informers.stop()
        with contextlib.suppress(Exception):
            await broadcaster.shutdown()
