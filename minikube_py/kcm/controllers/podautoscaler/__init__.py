"""The horizontal pod autoscaler (kube's `podautoscaler` package), in four parts read in this order:

* `horizontal.py`: the controller: each HorizontalPodAutoscaler once a sync period, its target's `/scale`,
  the metrics' proposals, the rescale, events and status conditions;
* `replicas.py`: the replica calculator: usage ratio against the target, tolerance, and what to do with
  pods that are not ready or have no sample;
* `stabilization.py`: stabilization windows and scaling policies (`spec.behavior`);
* `metrics.py`: pod resource use from `metrics.k8s.io`.

The target's `scale` subresource is read and written through `kcm/controllers/scaleclient.py`, which the
disruption controller shares.
"""

from minikube_py.kcm.controllers.podautoscaler.horizontal import HorizontalController

__all__ = ["HorizontalController"]
