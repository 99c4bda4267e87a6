"""What a controller is built from: its client and event recorder, the shared informers, the settings.

The controller manager makes one `ControllerContext` per controller. The informer factory is shared by all
of them (one watch per resource for the whole process, under the manager's own identity); the client and
the recorder are the controller's own (its ServiceAccount, see clientbuilder.py), so whatever it writes,
events included, is authorized as that controller.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minikube_py.client.clock import Clock, RealClock
from minikube_py.client.events import CoreEventRecorder
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.rest import RESTClient


@dataclass(frozen=True)
class ControllerSettings:
    """The controller manager's flags that tune individual controllers (kube's KubeControllerManagerConfiguration)."""

    terminated_pod_gc_threshold: int = 12500  # terminated pods kept before the oldest are deleted; 0: no limit
    pod_gc_period: float = 20.0  # seconds between pod GC passes
    orphan_quarantine: float = 40.0  # seconds a pod's node must stay missing before the pod is deleted


@dataclass
class ControllerContext:
    client: RESTClient
    recorder: CoreEventRecorder
    informers: SharedInformerFactory
    settings: ControllerSettings = field(default_factory=ControllerSettings)
    clock: Clock = field(default_factory=RealClock)
