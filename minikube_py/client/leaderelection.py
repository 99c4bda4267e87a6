"""Leader election on a `coordination.k8s.io/v1` Lease, so only one replica of a component acts at a time.

Every candidate runs `LeaderElector.run()`. The Lease's spec is the election record: `holderIdentity`,
`leaseDurationSeconds`, `acquireTime`, `renewTime` (RFC 3339 micro timestamps) and `leaseTransitions`.
As in client-go:
* A candidate takes the Lease when it does not exist, has no holder, or has expired. Expiry is measured on
  the candidate's own clock from the moment it last saw the record change (never from the timestamps in it,
  so clocks of different machines need not agree): `observed_time + leaseDurationSeconds < now`.
* Writes are optimistic: the update carries the resourceVersion last read, so of two candidates racing for
  an expired Lease one wins and the other gets 409 Conflict and tries again `retry_period` later.
* The leader renews every `retry_period`; if it cannot renew within `renew_deadline`, it stops leading:
  its `on_started_leading` task is cancelled, `on_stopped_leading` runs, and `run()` returns (components
  exit then, and a supervisor restarts them as candidates).
* Cancelling `run()` is a clean shutdown: with `release_on_cancel` the leader clears `holderIdentity` and
  sets `leaseDurationSeconds` to 1, so another candidate takes over at its next try instead of waiting out
  the lease.
* `on_new_leader(identity)` runs whenever the holder this candidate observes changes (itself included).

Usage rules: `lease_duration > renew_deadline > 1.2 × retry_period` (the jitter on the acquire loop), checked
when the config is built. `on_stopped_leading` runs only if this candidate did lead (client-go calls it
even for a candidate stopped while waiting). Callbacks must not block; `on_started_leading` is a coroutine
function run as a task for as long as the leadership lasts.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from minikube_py.api.timestamps import micro_time_string
from minikube_py.client import errors
from minikube_py.client.clock import Clock, RealClock
from minikube_py.client.resources import LEASES
from minikube_py.client.rest import RESTClient

JITTER_FACTOR = 1.2  # the acquire loop waits retry_period × (1 + up to 1.2)
API_FAILURES = (errors.APIStatusError, errors.TransportError, ValueError)  # ValueError: a reply that is not JSON

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Which Lease to contend for, as whom, and the timings (kube's defaults: 15 s / 10 s / 2 s)."""

    lease_name: str
    identity: str
    lease_namespace: str = "kube-system"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        for field, value in (("lease_name", self.lease_name), ("identity", self.identity),
                             ("lease_namespace", self.lease_namespace)):
            if not value:
                raise ValueError(f"leader election: {field} must not be empty")
        timings = (("lease_duration", self.lease_duration), ("renew_deadline", self.renew_deadline),
                   ("retry_period", self.retry_period))
        for field, seconds in timings:
            if seconds <= 0:
                raise ValueError(f"leader election: {field} must be greater than zero, got {seconds}s")
        if self.lease_duration < 1:
            raise ValueError(f"leader election: lease_duration must be at least 1s (a Lease holds whole "
                             f"seconds), got {self.lease_duration}s")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(f"leader election: lease_duration ({self.lease_duration}s) must be greater than "
                             f"renew_deadline ({self.renew_deadline}s)")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(f"leader election: renew_deadline ({self.renew_deadline}s) must be greater than "
                             f"retry_period × {JITTER_FACTOR} ({JITTER_FACTOR * self.retry_period:g}s)")


class EventRecorder(Protocol):
    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None: ...




def record_of(lease: dict[str, Any]) -> dict[str, Any]:
    """The election record a Lease's spec holds, with kube's zero values for missing fields."""
    spec = lease.get("spec") or {}
    return {"holderIdentity": spec.get("holderIdentity") or "",
            "leaseDurationSeconds": spec.get("leaseDurationSeconds") or 0,
            "acquireTime": spec.get("acquireTime"), "renewTime": spec.get("renewTime"),
            "leaseTransitions": spec.get("leaseTransitions") or 0}


class LeaderElector:
    """One candidate for one Lease; `await run()` campaigns, leads, and returns when leadership is lost."""

    def __init__(self, client: RESTClient, config: LeaderElectionConfig, *,
                 on_started_leading: Callable[[], Awaitable[None]],
                 on_stopped_leading: Callable[[], None] | None = None,
                 on_new_leader: Callable[[str], None] | None = None,
                 clock: Clock | None = None, recorder: EventRecorder | None = None) -> None:
        self.client = client
        self.config = config
        self.clock = clock or RealClock()
        self._on_started_leading = on_started_leading
        self._on_stopped_leading = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._recorder = recorder
        self._lease: dict[str, Any] | None = None  # the Lease as last read or written (its resourceVersion)
        self._observed: dict[str, Any] = record_of({})
        self._observed_time = 0.0
        self._reported_leader = ""

    @property
    def description(self) -> str:
        return f"{self.config.lease_namespace}/{self.config.lease_name}"

    def is_leader(self) -> bool:
        return self._observed["holderIdentity"] == self.config.identity

    def get_leader(self) -> str:
        """The holder this candidate last observed ("" if none)."""
        return str(self._observed["holderIdentity"])

    async def run(self) -> None:
        await self._acquire()
        leading = asyncio.create_task(self._on_started_leading(), name=f"leading-{self.config.lease_name}")
        leading.add_done_callback(_log_leading_failure)
        try:
            await self._renew_loop()
        finally:
            leading.cancel()
            await asyncio.gather(leading, return_exceptions=True)
            if self.config.release_on_cancel:
                await self._release()
            self._record_event("stopped leading")
            if self._on_stopped_leading is not None:
                self._on_stopped_leading()

    async def _acquire(self) -> None:
        log.info("attempting to acquire leader lease %s...", self.description)
        while True:
            acquired = await self._try_acquire_or_renew()
            self._maybe_report_transition()
            if acquired:
                log.info("successfully acquired lease %s", self.description)
                self._record_event("became leader")
                return
            period = self.config.retry_period
            await self.clock.sleep(period + random.random() * JITTER_FACTOR * period)

    async def _renew_loop(self) -> None:
        while await self._renew_within_deadline():
            await self.clock.sleep(self.config.retry_period)
        log.info("failed to renew lease %s: no renewal within %ss", self.description,
                 self.config.renew_deadline)

    async def _renew_within_deadline(self) -> bool:
        """Try to renew every retry_period until it works or renew_deadline has passed."""
        deadline = self.clock.now() + self.config.renew_deadline
        while (remaining := deadline - self.clock.now()) > 0:
            try:
                renewed = await asyncio.wait_for(self._try_acquire_or_renew(), remaining)
            except TimeoutError:
                return False
            self._maybe_report_transition()
            if renewed:
                return True
            await self.clock.sleep(min(self.config.retry_period, max(deadline - self.clock.now(), 0)))
        return False

    async def _try_acquire_or_renew(self) -> bool:
        now = micro_time_string(self.clock.wall())
        record = {"holderIdentity": self.config.identity,
                  "leaseDurationSeconds": int(self.config.lease_duration),
                  "acquireTime": now, "renewTime": now, "leaseTransitions": 0}
        if self.is_leader() and self._lease_valid():
            if await self._renew_from_cache(record):
                return True
        try:
            lease = await self.client.get(LEASES, self.config.lease_name, self.config.lease_namespace)
        except errors.NotFound:
            return await self._create(record)
        except API_FAILURES as err:
            log.error("error retrieving lease %s: %s", self.description, err)
            return False
        self._lease = lease
        old = record_of(lease)
        if old != self._observed:
            self._observe(old)
        if old["holderIdentity"] and self._lease_valid() and not self.is_leader():
            log.debug("lease %s is held by %s and has not yet expired", self.description,
                      old["holderIdentity"])
            return False
        if self.is_leader():
            record["acquireTime"] = old["acquireTime"]
            record["leaseTransitions"] = old["leaseTransitions"]
        else:
            record["leaseTransitions"] = old["leaseTransitions"] + 1
        return await self._write(record, "failed to update lease")

    async def _renew_from_cache(self, record: dict[str, Any]) -> bool:
        """The fast path of a leader: update the Lease we wrote last, without reading it first."""
        record["acquireTime"] = self._observed["acquireTime"]
        record["leaseTransitions"] = self._observed["leaseTransitions"]
        return await self._write(record, "failed to update lease optimistically, falling back to a read")

    async def _create(self, record: dict[str, Any]) -> bool:
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.config.lease_name, "namespace": self.config.lease_namespace},
                "spec": record}
        try:
            self._lease = await self.client.create(LEASES, body, self.config.lease_namespace)
        except API_FAILURES as err:
            log.error("error initially creating lease %s: %s", self.description, err)
            return False
        self._observe(record)
        return True

    async def _write(self, record: dict[str, Any], failure: str) -> bool:
        """Replace the Lease's spec; its resourceVersion makes a concurrent writer's change win (409)."""
        assert self._lease is not None
        lease = copy.deepcopy(self._lease)
        lease["spec"] = record
        try:
            self._lease = await self.client.update(LEASES, lease, self.config.lease_namespace)
        except API_FAILURES as err:
            log.info("%s %s: %s", failure, self.description, err)
            return False
        self._observe(record)
        return True

    async def _release(self) -> None:
        if not self.is_leader() or self._lease is None:
            return
        now = micro_time_string(self.clock.wall())
        record = {"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now,
                  "leaseTransitions": self._observed["leaseTransitions"]}
        release = self._write(record, "failed to release lease")
        try:
            if await asyncio.wait_for(release, self.config.renew_deadline):
                log.info("released lease %s", self.description)
        except TimeoutError:
            log.info("failed to release lease %s: no answer within %ss", self.description,
                     self.config.renew_deadline)

    def _observe(self, record: dict[str, Any]) -> None:
        self._observed = record
        self._observed_time = self.clock.now()

    def _lease_valid(self) -> bool:
        return self._observed_time + self._observed["leaseDurationSeconds"] > self.clock.now()

    def _maybe_report_transition(self) -> None:
        holder = self.get_leader()
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        if self._on_new_leader is not None:
            self._on_new_leader(holder)

    def _record_event(self, what: str) -> None:
        if self._recorder is not None and self._lease is not None:
            self._recorder.event(self._lease, "Normal", "LeaderElection", f"{self.config.identity} {what}")


def _log_leading_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("on_started_leading failed", exc_info=task.exception())


async def run_as_leader(client: RESTClient, config: LeaderElectionConfig | None,
                        work: Callable[[], Awaitable[None]], *, logger: logging.Logger) -> None:
    """A component's main loop: `work()` at once without leader election (`config` None), else only while
    holding the Lease. Returns when the Lease is lost (the component should then exit)."""
    if config is None:
        await work()
        return
    elector = LeaderElector(client, config, on_started_leading=work,
                            on_new_leader=lambda holder: logger.info("the leader is now %s", holder))
    await elector.run()
    logger.error("leader election lost")
