"""Assembling and running the cloud-controller-manager process (kube's `cloud-provider/app`).

    --cloud-provider, --cloud-config ─► registry.get_cloud_provider() ─► the provider (local, fake, a plugin)
    at once, before leading: serve_recorded(stop, hand_back_after)   (an InProcessLoadBalancer only)
    kubeconfig ─► one client as system:cloud-controller-manager
                    ├─► shared informers (nodes, services) for every controller
                    └─► cloud.initialize(client builder, stop)   once this process leads
    --controllers ─► each descriptor builds its controller from a CloudControllerContext ─► controller.run()

The split with the kube-controller-manager: the KCM runs every controller that needs no cloud; the four that
do (cloud-node, cloud-node-lifecycle, service-lb, node-route) run here, against whatever provider was named.
With leader election on (the default) only the holder of the `kube-system/cloud-controller-manager` Lease
initializes the cloud and runs controllers. A cloud whose load balancers carry traffic inside this process
(mkpy's local cloud) serves the ones it has recorded from the start, though: a restarted CCM waits out the
dead one's Lease before it leads, and its load balancers must not wait with it. A CCM that has not led within
a lease duration plus the renew deadline (time enough to take over a dead leader's Lease) hands them back,
since another CCM then leads.

Usage rules: the provider, its config, the kubeconfig and the controller list are checked before the first
API call, so a mistake is a one-line error (`CloudControllerManagerSetupError`). Losing the Lease ends the
process, as in kube.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from minikube_py.ccm.cloud import registry as cloud_registry
from minikube_py.ccm.cloud.interface import CloudProviderError, InProcessLoadBalancer, Interface
from minikube_py.ccm.context import CloudControllerContext, CloudSettings
from minikube_py.ccm.controllers import descriptors
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
from minikube_py.client.kubeconfig import ConfigError as KubeconfigError
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.leaderelection import LeaderElectionConfig
from minikube_py.client.rest import RESTClient

LEASE_NAME = "cloud-controller-manager"
log = logging.getLogger("mkpy.ccm")


class CloudControllerManagerSetupError(Exception):
    """The CCM cannot start: a bad flag, kubeconfig, controller name, cloud provider or cloud config."""


@dataclass
class Options:
    """What `mkpy ccm`'s flags say."""

    cloud_provider: str = ""
    cloud_config: str = ""  # path of the provider's config file
    kubeconfig: str = ""
    controllers: list[str] = field(default_factory=lambda: ["*"])
    workers: dict[str, int] = field(default_factory=dict)  # --concurrent-<flag>-syncs, by <flag>
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    bind_address: str = "0.0.0.0"
    secure_port: int = 10258
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    settings: CloudSettings = field(default_factory=CloudSettings)


class RootClientBuilder:
    """The client builder handed to the provider: every part of it acts as the CCM's own identity."""

    def __init__(self, root: RESTClient) -> None:
        self._root = root

    async def client(self, name: str) -> RESTClient:
        return self._root


def enabled_controllers(options: Options) -> list[ControllerDescriptor]:
    try:
        return ControllerRegistry(descriptors()).enabled(options.controllers, external_cloud=False)
    except RegistryError as error:
        raise CloudControllerManagerSetupError(f"invalid --controllers: {error}") from None


def cloud_provider(options: Options) -> Interface:
    """The provider `--cloud-provider` names, built with `--cloud-config`."""
    if not options.cloud_provider:
        raise CloudControllerManagerSetupError(
            f"--cloud-provider is required; available: {', '.join(cloud_registry.available())}")
    if options.cloud_provider == "external":
        raise CloudControllerManagerSetupError(
            '--cloud-provider=external is for the kubelet and the KCM; name the cloud itself here (e.g. "local")')
    try:
        return cloud_registry.get_cloud_provider(options.cloud_provider, options.cloud_config)
    except CloudProviderError as error:
        raise CloudControllerManagerSetupError(str(error)) from None


def leader_election(options: Options) -> LeaderElectionConfig | None:
    try:
        return leader_election_config(LEASE_NAME, leader_elect=options.leader_elect,
                                      lease_duration=options.lease_duration, renew_deadline=options.renew_deadline,
                                      retry_period=options.retry_period)
    except ValueError as error:
        raise CloudControllerManagerSetupError(f"invalid leader election settings: {error}") from None


async def run(options: Options) -> None:
    """Run the CCM until cancelled or the Lease is lost."""
    enabled = enabled_controllers(options)
    cloud = cloud_provider(options)
    election = leader_election(options)
    try:
        client_config = load_kubeconfig(options.kubeconfig or None)
    except KubeconfigError as error:
        raise CloudControllerManagerSetupError(str(error)) from None
    health = HealthServer(options.bind_address, options.secure_port, cert_file=options.tls_cert_file,
                          key_file=options.tls_private_key_file) if options.secure_port else None
    serving = asyncio.Event()
    try:
        await serve_before_leading(cloud, options, serving)
        await serve_and_lead(client_config, "cloud-controller-manager", health, election,
                             lambda root: run_controllers(root, cloud, enabled, options), log)
    except HealthServerError as error:
        raise CloudControllerManagerSetupError(str(error)) from None
    finally:
        serving.set()


async def serve_before_leading(cloud: Interface, options: Options, stop: asyncio.Event) -> None:
    """Let a cloud whose load balancers live in this process serve the recorded ones now, not once it leads;
    with leader election, for at most a lease duration plus the renew deadline unless it leads by then."""
    balancers = cloud.load_balancer()
    if not isinstance(balancers, InProcessLoadBalancer):
        return
    hand_back_after = options.lease_duration + options.renew_deadline if options.leader_elect else None
    try:
        await balancers.serve_recorded(stop, hand_back_after)
    except CloudProviderError as error:
        log.warning("cannot serve the recorded load balancers before leading: %s", error)


async def run_controllers(root: RESTClient, cloud: Interface, enabled: list[ControllerDescriptor],
                          options: Options) -> None:
    """Initialize the cloud, then build every enabled controller and run them all until cancelled."""
    stop = asyncio.Event()
    informers = SharedInformerFactory(root)
    broadcaster = EventBroadcaster(root)
    broadcaster.start_recording_to_sink()
    try:
        await cloud.initialize(RootClientBuilder(root), stop)
        log.info("initialized cloud provider %s", cloud.provider_name())
        async with asyncio.TaskGroup() as group:
            for descriptor in enabled:
                ctx = CloudControllerContext(client=root, recorder=broadcaster.new_core_recorder(descriptor.event_component),
                                             informers=informers, cloud=cloud, settings=options.settings)
                controller = descriptor.build(ctx)
                workers = options.workers.get(descriptor.workers_flag, descriptor.default_workers)
                group.create_task(controller.run(workers), name=descriptor.name)
                log.info("started %s", descriptor.name)
            informers.start()
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            await informers.stop()
        with contextlib.suppress(Exception):
            await broadcaster.shutdown()
