"""The garbage collector (kube's `pkg/controller/garbagecollector`): cascading deletion by ownerReferences.

An object names its owners in `metadata.ownerReferences`; when every owner is gone, the object goes too.
A DELETE chooses how the owner's dependents are treated (`propagationPolicy`): `Background` (the owner goes
at once, the collector deletes the dependents afterwards), `Foreground` (the apiserver keeps the owner with
the `foregroundDeletion` finalizer until the collector has deleted the dependents that block it) or `Orphan`
(the apiserver keeps the owner with the `orphan` finalizer until the collector has removed the dependents'
references to it; the dependents stay).

The pieces, in the order data flows through them:
* monitors.py: an informer on every resource discovery lists (re-read every 30 s, so CRDs join later);
* builder.py: turns each informer event into a change of the graph and queues the nodes to look at;
* graph.py: the nodes (one per object, by uid), their owners and dependents; virtual nodes for owners
  named but not seen yet;
* collector.py: the workers that decide, per node, to delete, to patch references, or to finish a
  foreground or orphan deletion;
* operations.py: the API calls, each guarded by uid (and resourceVersion) preconditions.
"""

from minikube_py.kcm.controllers.garbagecollector.collector import GarbageCollector

__all__ = ["GarbageCollector"]
