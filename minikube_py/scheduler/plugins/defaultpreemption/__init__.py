"""DefaultPreemption: PriorityClass-based preemption (the plugin, kube's preemption evaluator, PDB checks)."""

from __future__ import annotations

from minikube_py.scheduler.plugins.defaultpreemption.plugin import DefaultPreemption

__all__ = ["DefaultPreemption"]
