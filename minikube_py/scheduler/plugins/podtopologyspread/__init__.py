"""PodTopologySpread: the scheduler plugin that spreads pods across topology domains (see `plugin.py`)."""

from __future__ import annotations

from minikube_py.scheduler.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = ["PodTopologySpread"]
