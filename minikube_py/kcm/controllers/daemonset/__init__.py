"""The DaemonSet controller: `controller` (informers, handlers, `sync`, creating and deleting daemon pods),
`placement` (which nodes should run a daemon pod, and the pod made for a node), `rollingupdate` (which old
pods to replace now), `revisions` (the ControllerRevisions that name each version of the template), `status`
(the counts kubectl shows) and `backoff` (the brake on deleting failed pods)."""

from minikube_py.kcm.controllers.daemonset.controller import DaemonSetController

__all__ = ["DaemonSetController"]
