"""Server-side apply and field ownership (`metadata.managedFields`), as kube's structured-merge-diff does it.

* `schema`: an object's shape — scalars, structs, granular or atomic maps, atomic lists, sets and
  list-maps — from the upstream definitions of built-in kinds or a CRD's schema;
* `fieldpath`: field paths, sets of them and their wire form FieldsV1;
* `typed`: field sets of objects, comparisons, apply's merge, removal of fields;
* `zero`: the empty object of a kind, which a create is compared against;
* `manager`: managedFields entries and `FieldTracker`, which records every write and runs an apply.

The registry (`apiserver/registry/generic.py`) gives every create and update a `FieldTracker`:

    tracker = FieldTracker(type_of_kind("apps", "v1", "Deployment"), "apps/v1", "kubectl-edit",
                           zero_object("apps/v1", "Deployment"))
    tracker.track(old, new)       # new.metadata.managedFields now says kubectl-edit owns what it changed

and for an apply, `FieldTracker(..., config=applied, force=False)`: `tracker.mutate(live)` is the merged
object and `track` raises 409 Conflict for fields other managers own.
"""

from .manager import APPLY, UPDATE, FieldTracker, malformed, manager_name
from .schema import Type, type_of_crd, type_of_kind
from .zero import zero_object

__all__ = ["APPLY", "UPDATE", "FieldTracker", "Type", "malformed", "manager_name", "type_of_crd", "type_of_kind",
           "zero_object"]
