"""The StatefulSet controller: pods with a stable identity, made, updated and removed in order.

A StatefulSet `web` with 3 replicas runs pods `web-0`, `web-1`, `web-2`, each with a DNS name under the
headless Service `spec.serviceName` and its own PersistentVolumeClaims, which stay when the pod is replaced.
By default (`podManagementPolicy: OrderedReady`) pod N+1 is created only once pod N is Running and Ready,
scale-down removes the highest ordinal first, and a template change rolls out from the highest ordinal down,
one pod at a time, down to `updateStrategy.rollingUpdate.partition`. Each template version is kept as a
ControllerRevision, which is what `kubectl rollout history|undo statefulset/web` read and apply.

The modules, in the order a reader meets them:

* `controller` — informers, event handlers and `sync(key)`: adoption of pods and revisions, then one pass;
* `control` — the pass itself: revisions, ordered creation, scale-down, rolling update, status, history;
* `statefulpod` — the writes for one pod (its claims, the pod, its deletion) and their Events;
* `identity` — names, ordinals, identity labels, hostname, volumes, pod health;
* `claims` — the claims' names and the ownerReferences the retention policy wants on them;
* `revisions` — ControllerRevision data, rollback by patch, hash collisions.
"""

from minikube_py.kcm.controllers.statefulset.controller import StatefulSetController

__all__ = ["StatefulSetController"]
