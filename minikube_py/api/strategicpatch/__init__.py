"""Strategic merge patch (`application/strategic-merge-patch+json`), exactly as kube-apiserver applies it.

Why it exists. A JSON merge patch (RFC 7386) merges objects key by key but can only *replace* a list. That
is wrong for most Kubernetes lists: `kubectl set image` wants to change one container's image without
sending, and so without knowing, the rest of the containers; `kubectl apply` wants to add an env var
without dropping the ones a controller injected. Strategic merge patch is JSON merge patch plus knowledge of
the schema: each list field declares whether it merges and, for lists of objects, which field identifies an
element (its *merge key*: containers by `name`, ports by `containerPort`, volumeMounts by `mountPath`,
conditions by `type`). `{"spec":{"containers":[{"name":"nginx","image":"nginx:1.29"}]}}` then means "the
container named nginx gets this image"; its ports and the other containers stay.

Since JSON can't otherwise say "delete this element" or "keep this order", the patch may also carry
directives, keys beginning with `$` (see `directives`): `$patch: replace|delete`, `$retainKeys`,
`$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>`. kubectl's three-way apply sends them;
the server only applies.

Where it sits. The apiserver's PATCH handler decodes the body, reads the live object and calls
`apply_strategic_merge_patch` inside the registry's read-modify-write loop; the result then goes through
defaulting, validation and admission like an update. Kinds without an upstream schema (custom resources)
don't support it: the handler answers 415 before getting here (`supports_strategic_merge_patch`).

The package follows apimachinery's `pkg/util/strategicpatch` (1.32) behaviour for behaviour, including its
error texts and status codes (`errors`):

* `patchmeta` — the merge strategy and merge key of each field, looked up in the upstream schema;
* `merge` — the walk over maps and lists;
* `directives` — the `$` keys;
* `ordering` — where merged list elements end up;
* `values` — Go's view of JSON values (types, equality, `%v`), which the algorithm and its messages follow.

Like kube's, the result may still hold what the typed decoding that follows would drop: null fields inside
a value the patch put in place whole (a `$patch: replace` map, a new list element) and directive keys inside
such values.
"""

from __future__ import annotations

from typing import Any

from ..errors import bad_request
from ..jsoncopy import copy_json
from . import errors
from .merge import merge_map
from .patchmeta import schema_for_kind

__all__ = ["apply_strategic_merge_patch", "supports_strategic_merge_patch"]

_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "bool"}


def supports_strategic_merge_patch(group: str, version: str, kind: str) -> bool:
    """Whether the kind has the schema strategic merge patch needs (built-in kinds do, custom ones don't)."""
    return schema_for_kind(group, version, kind) is not None


def apply_strategic_merge_patch(original: dict[str, Any], patch: Any, group: str, version: str,
                                kind: str) -> dict[str, Any]:
    """The object `original` of kind group/version/kind with the decoded strategic merge patch applied.

    Neither argument is changed. Raises `APIError`: 400 for a patch that isn't a JSON object, for a kind
    without schema and for malformed directives; 422 for lists of lists; 500 (empty reason) for the other
    merge errors, as kube does.
    """
    schema = schema_for_kind(group, version, kind)
    if schema is None:
        raise errors.unsupported_format()
    if patch is None:  # Go decodes `null` into an empty patch
        patch = {}
    if not isinstance(patch, dict):
        raise bad_request(f"json: cannot unmarshal {_JSON_KINDS[type(patch)]} into Go value of type "
                          "map[string]interface {}")
    return merge_map(copy_json(original), copy_json(patch), schema)

