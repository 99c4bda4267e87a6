"""The Job controller (kube's `job-controller`): run pods until enough of them succeed, or give up.

A Job wants `completions` successful pods (NonIndexed: any pods; Indexed: one per index 0…completions-1),
running at most `parallelism` at a time. Failed pods are replaced after an exponential backoff until
`backoffLimit` failures (or `activeDeadlineSeconds`, or a podFailurePolicy rule) fail the Job; `suspend`
stops its pods until it is resumed. Every pod carries the `batch.kubernetes.io/job-tracking` finalizer, so
each success and failure is counted exactly once even when pods are deleted.

The package, one concept per module:
* controller.py: handlers, queues and `sync(key)`, the order of the steps;
* manage.py: creating and deleting pods toward the wanted count;
* tracking.py: counting finished pods through the finalizer and writing the status and final conditions;
* conditions.py: the Job conditions (FailureTarget → Failed, SuccessCriteriaMet → Complete, Suspended);
* indexes.py: Indexed Jobs, compressed index intervals, per-index backoff, the success policy;
* podfailurepolicy.py: matching failed pods against `spec.podFailurePolicy`;
* backoff.py: the delay before failed pods are replaced;
* pods.py: reading pods (failed, ready, terminating, finish time); synccontext.py: one sync's state.
"""

from minikube_py.kcm.controllers.job.controller import JobController

__all__ = ["JobController"]
