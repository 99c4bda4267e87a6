"""Which controllers a controller manager knows, and which of them `--controllers` turns on.

Shared by the kube-controller-manager and the cloud-controller-manager, as kube's `k8s.io/controller-manager`
library is: the controller registry below, and the process shape both run (`leader_election_config`,
`serve_and_lead`).

Each controller is described once, in `descriptors()` (kube's `NewControllerDescriptors`): its canonical name
(`replicaset-controller`), the short aliases `--controllers` also accepts (`replicaset`), the ServiceAccount in
kube-system whose credentials it acts with (`replicaset-controller`, bound by RBAC's bootstrap policy to
`system:controller:replicaset-controller`; empty in the CCM, whose controllers share its identity), and the
function that builds it from the manager's context.

    registry = ControllerRegistry(descriptors())
    names = registry.enabled(["*", "-podgc"])   # every controller on by default except pod GC

`--controllers` reads as in kube: `*` is every controller that is on by default, `name` turns one on, `-name`
turns one off; later entries do not override earlier ones, an explicit `-name` always wins. An unknown name
is an error naming it, never ignored.

Usage rules: the registry refuses a second descriptor with a name or alias already taken (there is no
import-time self-registration that could silently shadow a controller). Cloud controllers (`cloud=True`) are
never started when `--cloud-provider=external`: the cloud-controller-manager runs them.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from minikube_py.client.healthz import HealthServer
from minikube_py.client.kubeconfig import ClientConfig, user_agent
from minikube_py.client.leaderelection import LeaderElectionConfig, run_as_leader
from minikube_py.client.rest import RESTClient


class Controller(Protocol):
    """What a descriptor builds: a control loop that runs until cancelled."""

    name: str

    async def run(self, workers: int) -> None:
        """Wait for the caches this controller reads, then work `workers` workers until cancelled."""


@dataclass(frozen=True)
class ControllerDescriptor:
    name: str
    service_account: str  # kube-system/<service_account> is the identity the controller acts with
    build: Callable[[Any], Controller]  # from the manager's context (kcm's ControllerContext, ccm's CloudControllerContext)
    aliases: tuple[str, ...] = ()
    disabled_by_default: bool = False
    cloud: bool = False  # needs a cloud provider: left to the cloud-controller-manager with "external"
    workers_flag: str = ""  # the <name> in --concurrent-<name>-syncs, if the controller has workers
    default_workers: int = 1
    event_source: str = ""  # the `source.component` of its Events when kube's differs from service_account

    @property
    def event_component(self) -> str:
        """The component name its Events carry, as kube's controller of that name records them."""
        return self.event_source or self.service_account


class RegistryError(ValueError):
    """A duplicate descriptor, or `--controllers` naming a controller nobody knows."""


class ControllerRegistry:
    def __init__(self, descriptors: Iterable[ControllerDescriptor] = ()) -> None:
        self._by_name: dict[str, ControllerDescriptor] = {}
        self._aliases: dict[str, str] = {}  # alias -> canonical name
        for descriptor in descriptors:
            self.register(descriptor)

    def register(self, descriptor: ControllerDescriptor) -> None:
        for name in (descriptor.name, *descriptor.aliases):
            if name in self._by_name or name in self._aliases:
                raise RegistryError(f"controller name {name!r} is registered twice")
        self._by_name[descriptor.name] = descriptor
        self._aliases.update(dict.fromkeys(descriptor.aliases, descriptor.name))

    def __iter__(self) -> Iterator[ControllerDescriptor]:
        return iter(self._by_name.values())

    def get(self, name: str) -> ControllerDescriptor:
        """The descriptor for a canonical name or an alias; RegistryError if there is none."""
        canonical = self._aliases.get(name, name)
        if canonical not in self._by_name:
            raise RegistryError(f'"{name}" is not in the list of known controllers')
        return self._by_name[canonical]

    def enabled(self, spec: Iterable[str], *, external_cloud: bool = True) -> list[ControllerDescriptor]:
        """The controllers `--controllers=spec` turns on, in registration order."""
        spec = [entry.strip() for entry in spec if entry.strip()]
        star = "*" in spec
        on = {self.get(entry).name for entry in spec if entry not in ("*",) and not entry.startswith("-")}
        off = {self.get(entry[1:]).name for entry in spec if entry.startswith("-")}
        chosen = []
        for descriptor in self._by_name.values():
            wanted = descriptor.name in on or (star and not descriptor.disabled_by_default)
            if wanted and descriptor.name not in off and not (descriptor.cloud and external_cloud):
                chosen.append(descriptor)
        return chosen


def leader_election_config(lease_name: str, *, leader_elect: bool, lease_duration: float, renew_deadline: float,
                           retry_period: float) -> LeaderElectionConfig | None:
    """The kube-system Lease a controller manager contends for, as this process; None with `--leader-elect=false`.
    ValueError for timings that cannot work."""
    if not leader_elect:
        return None
    return LeaderElectionConfig(lease_name=lease_name, identity=f"{socket.gethostname()}_{os.getpid()}",
                                lease_duration=lease_duration, renew_deadline=renew_deadline, retry_period=retry_period)


async def serve_and_lead(client_config: ClientConfig, component: str, health: HealthServer | None,
                         election: LeaderElectionConfig | None, run_controllers: Callable[[RESTClient], Awaitable[None]],
                         logger: logging.Logger) -> None:
    """A controller manager's main: serve /healthz, and run `run_controllers(client)` while holding the Lease.

    The Lease is renewed over a client of its own (kube's separate leader-election clientset): a burst of
    controller writes queued on the shared client must never delay a renewal past the deadline. Raises
    HealthServerError when /healthz cannot be served; returns when the Lease is lost."""
    client_config = dataclasses.replace(client_config, user_agent=user_agent(component))
    election_config = dataclasses.replace(client_config, user_agent=user_agent(f"{component}/leader-election"))
    async with RESTClient(client_config) as root, RESTClient(election_config) as election_client:
        if health is not None:
            await health.start()
        try:
            await run_as_leader(election_client, election, lambda: run_controllers(root), logger=logger)
        finally:
            if health is not None:
                await health.stop()
