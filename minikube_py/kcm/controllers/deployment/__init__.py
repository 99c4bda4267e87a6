"""The Deployment controller: rolls a pod template out through ReplicaSets, one per version.

A Deployment never makes pods itself. For each version of its pod template it owns a ReplicaSet named
`<deployment>-<pod-template-hash>` (the hash of the template), whose selector and pods carry that hash as
the `pod-template-hash` label, so the pods of two versions never mix. Rolling out a new template means
growing the new ReplicaSet and shrinking the old ones (RollingUpdate), or shrinking all old ones to zero
first (Recreate); the ReplicaSet controller makes and deletes the actual pods. Old ReplicaSets, scaled to
0, stay as the history `kubectl rollout undo` goes back to: an undo only copies an old template back into
the Deployment, and the controller then finds that old ReplicaSet to be the new one again.

Modules, as in kube's pkg/controller/deployment:
* controller.py: informers, event handlers, `sync(key)` and the choice between the paths below;
* sync.py: the new ReplicaSet and revisions, scaling (proportional mid-rollout), history cleanup, status;
* rolling.py / recreate.py: one step of each strategy;
* progress.py: the Progressing condition and the progress deadline;
* util.py: the pure arithmetic (fenceposts, annotations, conditions, proportions).
"""

from minikube_py.kcm.controllers.deployment.controller import DeploymentController

__all__ = ["DeploymentController"]
