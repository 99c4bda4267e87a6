"""The garbage-collector settings every long-running component makes once it has started.

CPython frees most objects by reference counting; its cyclic collector only exists for reference cycles,
and now and then (the more objects survive, the more often) it runs a *full* collection, which walks every
container object alive. A component that has just started holds tens of thousands of objects it will keep
for its whole life (modules, the API's schemas and OpenAPI documents, its caches' first contents), so each
full collection spent most of its time re-walking them: in the apiserver under a stream of creates, full
collections took ~40 ms each, several a second, about a tenth of its CPU; in the scheduler at 5000 nodes
~0.1 s each.

`settle()` does two things:

* it moves everything alive at that moment into the collector's permanent generation (`gc.freeze()`):
  those objects are never walked again, and collections only look at what came later. Objects frozen that
  way are still freed by reference counting when nothing refers to them any more; only a cycle among them
  would stay, which for state kept for the process's life is no loss;
* it collects the youngest objects every 50,000 allocations instead of CPython's 700: a request, a watch
  event or a scheduling cycle keeps hundreds of objects alive until it ends, so at 700 the collector ran
  several times per request, freed next to nothing, and moved those objects on to the older generations to
  be walked again later. Under load a component has many of them in flight at once (the apiserver serving
  a hundred kubelets, the simulated-nodes process running them): with 10,000, in the simulated-nodes
  benchmark, the apiserver spent ~2 s of its ~40 s of CPU in the collector and the simulated nodes 3–5 s of
  25–30 s; with 50,000 about 0.7 s and 2 s (docs/benchmarks.md §9). The young objects waiting for a
  collection take a few MB at most.

The apiserver settles when it is ready to serve (`APIServer.start`), the other components just before their
main coroutine starts (`cli/signals.py`); a component may settle again once its caches are filled (the
scheduler does, after its informers synced).
"""

from __future__ import annotations

import gc

YOUNG_COLLECTION_THRESHOLD = 50_000


def settle() -> None:
    """Collect what startup left behind, exempt everything still alive from future collections, and collect
    young objects less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])
