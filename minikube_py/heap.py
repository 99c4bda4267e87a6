"""The garbage-collector setting every long-running component makes once it has started.

CPython frees most objects by reference counting; its cyclic collector only exists for reference cycles,
and now and then (the more objects survive, the more often) it runs a *full* collection, which walks every
container object alive. A component that has just started holds tens of thousands of objects it will keep
for its whole life (modules, the API's schemas and OpenAPI documents, its caches' first contents), so each
full collection spent most of its time re-walking them: in the apiserver under a stream of creates, full
collections took ~40 ms each, several a second, about a tenth of its CPU.

`settle()` moves everything alive at that moment into the collector's permanent generation
(`gc.freeze()`): those objects are never walked again, and collections only look at what came later.
Objects frozen that way are still freed by reference counting when nothing refers to them any more; only
a cycle among them would stay, which for startup state is no loss. The apiserver settles when it is ready
to serve (`APIServer.start`), the other components just before their main coroutine starts
(`cli/signals.py`).
"""

from __future__ import annotations

import gc


def settle() -> None:
    """Collect what startup left behind, then exempt everything still alive from future collections."""
    gc.collect()
    gc.freeze()
