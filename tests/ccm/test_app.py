"""ccm/app.py's step before leader election: which clouds are asked to serve their recorded load balancers
at start, for how long, and what a failure there does (the serving itself is in test_local_loadbalancer.py)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from minikube_py.ccm.app import Options, serve_before_leading
from minikube_py.ccm.cloud.fake import FakeCloud
from minikube_py.ccm.cloud.local.state import CloudStateError


class InProcessBalancers:
    """A load balancer capability that runs in the CCM's process: records how it was asked to serve."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.calls: list[tuple[asyncio.Event, float | None]] = []

    async def serve_recorded(self, stop: asyncio.Event, hand_back_after: float | None) -> None:
        self.calls.append((stop, hand_back_after))
        if self.error is not None:
            raise self.error


class CloudOf(FakeCloud):
    """The fake cloud with the given load balancer capability."""

    def __init__(self, balancers: InProcessBalancers) -> None:
        super().__init__()
        self.in_process = balancers

    def load_balancer(self) -> InProcessBalancers:  # type: ignore[override]
        return self.in_process


@pytest.mark.parametrize(
    ("case", "options", "hand_back_after"),
    [
        ("with leader election: hand back after a lease duration plus the renew deadline", Options(), 25.0),
        ("with other timings, the same sum", Options(lease_duration=8.0, renew_deadline=5.0), 13.0),
        (
            "without leader election this process leads at once: never hand back",
            Options(leader_elect=False),
            None,
        ),
    ],
)
async def test_an_in_process_cloud_serves_its_recorded_load_balancers_before_leading(
    case: str, options: Options, hand_back_after: float | None
) -> None:
    balancers, stop = InProcessBalancers(), asyncio.Event()
    await serve_before_leading(CloudOf(balancers), options, stop)
    assert balancers.calls == [(stop, hand_back_after)], case


async def test_a_cloud_whose_load_balancers_live_elsewhere_is_not_asked() -> None:
    cloud = FakeCloud()
    await serve_before_leading(cloud, Options(), asyncio.Event())
    assert cloud.calls == []


async def test_a_cloud_that_cannot_serve_before_leading_is_a_warning_and_the_ccm_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    balancers = InProcessBalancers(CloudStateError("cloud state /x/state.json: not a JSON object"))
    with caplog.at_level(logging.WARNING, logger="mkpy.ccm"):
        await serve_before_leading(CloudOf(balancers), Options(), asyncio.Event())
    assert "cannot serve the recorded load balancers before leading: cloud state /x/state.json" in caplog.text
