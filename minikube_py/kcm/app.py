"""Assembling and running the controller manager process (kube's `cmd/kube-controller-manager/app`).

    kubeconfig ─► root client (system:kube-controller-manager: list/watch everything)
                    ├─► shared informers, one watch per resource for every controller
                    └─► ServiceAccountClientBuilder ─► one client per controller (kube-system/<account>)
    --controllers ─► registry.enabled() ─► each descriptor builds its controller from a ControllerContext
                                          ─► controller.run(--concurrent-<name>-syncs workers)

With leader election on (the default) only the holder of the `kube-system/kube-controller-manager` Lease runs
controllers; /healthz answers from the start, with a `leaderElection` check once it leads or waits.

Usage rules: flags, kubeconfig and the controller list are checked before the first API call, so a mistake is
a one-line error (`ControllerManagerSetupError`). Losing the Lease ends the process, as in kube; whatever
supervises it starts a fresh one, which becomes a candidate again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from dataclasses import dataclass, field

from minikube_py.client.controllermanager import (
    ControllerDescriptor,
    ControllerRegistry,
    RegistryError,
    leader_election_config,
    serve_and_lead,
)
from minikube_py.client.events import EventBroadcaster
from minikube_py.client.healthz import HealthServer, HealthServerError
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.kubeconfig import ClientConfig, load_kubeconfig
from minikube_py.client.kubeconfig import ConfigError as KubeconfigError
from minikube_py.client.leaderelection import LeaderElectionConfig
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.clientbuilder import ServiceAccountClientBuilder
from minikube_py.kcm.context import ControllerContext, ControllerSettings
from minikube_py.kcm.controllers import descriptors

LEASE_NAME = "kube-controller-manager"
log = logging.getLogger("mkpy.kcm")


class ControllerManagerSetupError(Exception):
    """The controller manager cannot start: a bad flag, kubeconfig or controller name."""


@dataclass
class Options:
    """What `mkpy kcm`'s flags say."""

    kubeconfig: str = ""
    controllers: list[str] = field(default_factory=lambda: ["*"])
    workers: dict[str, int] = field(default_factory=dict)  # --concurrent-<flag>-syncs, by <flag>
    cloud_provider: str = ""
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    bind_address: str = "0.0.0.0"
    secure_port: int = 10257
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    settings: ControllerSettings = field(default_factory=ControllerSettings)


def registry() -> ControllerRegistry:
    return ControllerRegistry(descriptors())


def enabled_controllers(options: Options) -> list[ControllerDescriptor]:
    try:
        return registry().enabled(options.controllers, external_cloud=options.cloud_provider == "external")
    except RegistryError as error:
        raise ControllerManagerSetupError(f"invalid --controllers: {error}") from None


def leader_election(options: Options) -> LeaderElectionConfig | None:
    try:
        return leader_election_config(LEASE_NAME, leader_elect=options.leader_elect,
                                      lease_duration=options.lease_duration, renew_deadline=options.renew_deadline,
                                      retry_period=options.retry_period)
    except ValueError as error:
        raise ControllerManagerSetupError(f"invalid leader election settings: {error}") from None


async def run(options: Options) -> None:
    """Run the controller manager until cancelled or the Lease is lost."""
    enabled = enabled_controllers(options)
    election = leader_election(options)
    try:
        client_config = load_kubeconfig(options.kubeconfig or None)
    except KubeconfigError as error:
        raise ControllerManagerSetupError(str(error)) from None
    if not options.settings.root_ca:
        options = dataclasses.replace(options, settings=dataclasses.replace(
            options.settings, root_ca=_kubeconfig_ca(client_config)))
    health = HealthServer(options.bind_address, options.secure_port, cert_file=options.tls_cert_file,
                          key_file=options.tls_private_key_file) if options.secure_port else None
    try:
        await serve_and_lead(client_config, "kube-controller-manager", health, election,
                             lambda root: run_controllers(root, enabled, options), log)
    except HealthServerError as error:
        raise ControllerManagerSetupError(str(error)) from None


async def run_controllers(root: RESTClient, enabled: list[ControllerDescriptor], options: Options) -> None:
    """Build every enabled controller and run them all, with the shared informers, until cancelled."""
    informers = SharedInformerFactory(root)
    builder = ServiceAccountClientBuilder(root)
    broadcasters: list[EventBroadcaster] = []
    try:
        async with asyncio.TaskGroup() as group:
            for descriptor in enabled:
                client = await builder.client(descriptor.service_account)
                broadcaster = EventBroadcaster(client)
                broadcaster.start_recording_to_sink()
                broadcasters.append(broadcaster)
                ctx = ControllerContext(client=client, recorder=broadcaster.new_core_recorder(descriptor.event_component),
                                        informers=informers, settings=options.settings)
                controller = descriptor.build(ctx)
                workers = options.workers.get(descriptor.workers_flag, descriptor.default_workers)
                group.create_task(controller.run(workers), name=descriptor.name)
                log.info("started %s", descriptor.name)
            informers.start()
            group.create_task(builder.run(), name="service-account-tokens")
    finally:
        with contextlib.suppress(Exception):
            await informers.stop()
        for broadcaster in broadcasters:
            with contextlib.suppress(Exception):
                await broadcaster.shutdown()
        await builder.close()


def _kubeconfig_ca(config: ClientConfig) -> str:
    """The CA the controller manager trusts for the apiserver: what pods should trust too."""
    if config.ca_data:
        return config.ca_data.decode()
    if config.ca_file:
        with open(config.ca_file, encoding="utf-8") as f:
            return f.read()
    return ""
