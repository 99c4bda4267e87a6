"""InterPodAffinity: the scheduler plugin for pod affinity and anti-affinity (see `plugin.py`)."""

from __future__ import annotations

from minikube_py.scheduler.plugins.interpodaffinity.plugin import InterPodAffinity

__all__ = ["InterPodAffinity"]
