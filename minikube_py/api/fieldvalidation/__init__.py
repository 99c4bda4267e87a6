"""Field validation: the `fieldValidation` query parameter of create, update and patch, as kube 1.32 does it.

Where it sits: right after a write's body is decoded and before anything else looks at it (apiVersion/kind
checks, defaults, validation, the registry). kube does the same work while decoding the body into the kind's
Go struct (`tree.py` compiles that struct's shape, `decoder.py` walks a body through it).

What kube does, and so what this package does:

* The directive is `Strict`, `Warn` or `Ignore`; absent or empty means **Warn** (kubectl sends `Strict`
  unless told `--validate=warn|false`). Any other value is `422 Invalid` from validating the request's
  options (`CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: ...`).
* Unknown fields (keys the kind's struct does not have, anywhere in the body, except below
  `x-kubernetes-preserve-unknown-fields` and inside free-form types such as RawExtension) and duplicate
  keys are *strict errors*. `Strict`: create/update fail with `400 BadRequest` `<Kind> in version "<v>"
  cannot be handled as a <Kind>: strict decoding error: unknown field "spec.foo", duplicate field "x"`;
  patches fail with `422 Invalid` on the field `patch`. `Warn`: the write goes ahead and each strict
  error comes back as a `Warning: 299 - "unknown field \\"spec.foo\\""` response header (kubectl prints
  `Warning: unknown field "spec.foo"`). `Ignore`: nothing is reported.
* Whatever the directive, unknown fields are dropped before the object is stored (a typed object has
  nowhere to keep them), and a value that does not fit its type fails the write: `400` for create/update
  (`... cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field
  DeploymentSpec.spec.replicas of type int32`), `422` on `patch` for patches.

Usage (handler side):

    mode = fieldvalidation.directive(query.get("fieldValidation"), "CreateOptions")
    body = fieldvalidation.decode_json(raw, mode)          # JSON bodies: sees duplicate keys when checked
    body, warnings = fieldvalidation.check_fields(gvk, body, None, mode)
    ... then apiVersion/kind checks, the registry; add `warning_header(w)` for each warning to the response.

Patches check the patched object instead (`check_patched`), together with the strict errors of the patch
document itself (`patch_errors`); `as_typed` checks an object the server got elsewhere (a mutating
webhook's patch). Kinds without an upstream definition are not checked.

A merge or strategic merge patch is checked only where it changed the object (`decode_touched`): the fields
its keys lead to. That is safe because everything else in the patched object is the live object, which was
decoded, pruned and stored clean, so walking it again would find nothing; on a kubelet's status patch it
spares the walk over the whole spec and metadata. A JSON patch can move and copy values anywhere, so its
result is checked whole.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from .. import errors
from ..gofmt import go_json
from .decoder import (
    DecodeError,
    decode,
    decode_touched,
    has_duplicates,
    loads_marking_duplicates,
    untyped_strict_errors,
)
from .tree import kind_tree

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"
DIRECTIVES = ("", IGNORE, STRICT, WARN)
JSON_PATCH = "application/json-patch+json"
MERGING_PATCHES = frozenset({"application/merge-patch+json", "application/strategic-merge-patch+json"})
JSON_PATCH_OP_FIELDS = frozenset({"op", "path", "from", "value"})

GVK = tuple[str, str, str]


def directive(value: str | None, options_kind: str) -> str:
    """The request's directive (`Warn` when absent); `options_kind` is CreateOptions, UpdateOptions or
    PatchOptions, named in the 422 for a value kube does not know."""
    if not value:
        return WARN
    if value in DIRECTIVES:
        return value
    cause = errors.not_supported("fieldValidation", value, list(DIRECTIVES))
    message = f'{options_kind}.meta.k8s.io "" is invalid: {cause.describe()}'
    details = {"group": "meta.k8s.io", "kind": options_kind, "causes": [cause.cause()]}
    raise errors.APIError(422, "Invalid", message, details)


def decode_json(raw: bytes, mode: str) -> Any:
    """Parse a JSON body; when fields are checked, objects with repeated keys are marked for the check."""
    try:
        return orjson.loads(raw) if mode == IGNORE else loads_marking_duplicates(raw)
    except ValueError as exc:
        raise errors.bad_request(f"the object provided is unrecognized: {exc}") from None


def check_fields(gvk: GVK, obj: dict[str, Any], raw_body: bytes | None, mode: str) -> tuple[dict[str, Any],
                                                                                              list[str]]:
    """Check a create or update body: the object to go on with (unknown fields dropped) and the warnings.

    `raw_body` is the JSON body as received when `obj` was parsed some other way (orjson): it is parsed
    again to see duplicate keys, and the returned object replaces `obj`. Pass None when `obj` came from
    `decode_json` or from YAML. Raises 400 BadRequest for a type error, and for strict errors under Strict.
    """
    tree = kind_tree(*gvk)
    if tree is None:
        return obj, []
    if raw_body is not None and mode != IGNORE:
        obj = decode_json(raw_body, mode)
    group, version, kind = gvk
    try:
        pruned, strict_errors = decode(tree, obj)
    except DecodeError as exc:
        raise _cannot_handle(kind, version, str(exc)) from None
    if strict_errors and mode == STRICT:
        raise _cannot_handle(kind, version, strict_decoding_error(strict_errors))
    return pruned, strict_errors if mode == WARN else []


def as_typed(gvk: GVK, obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` as decoding it into the kind's struct leaves it, quietly (unknown fields dropped, as a typed
    object has nowhere to keep them); raises DecodeError for a value that does not fit its type. For objects
    the server got from elsewhere than the request body, such as a mutating webhook's patch."""
    tree = kind_tree(*gvk)
    return obj if tree is None else decode(tree, obj)[0]


def check_patched(gvk: GVK, patched: dict[str, Any], mode: str, *, patch_strict_errors: list[str] | tuple[()] = (),
                  shown: str | None = None, patch: Any = None,
                  content_type: str = "") -> tuple[dict[str, Any], list[str]]:
    """Check a patched object: the object to store and the warnings, or 422 Invalid on the field `patch`.

    `patch_strict_errors` come from the patch document itself (`patch_errors`). `shown` is the value kube
    quotes in the error: the patched object's JSON for JSON and merge patches (the default), the patch
    document in Go's `%+v` form (`gofmt.go_v`) for strategic merge patches. `patch` is the parsed patch
    document and `content_type` its media type: for a merge or strategic merge patch only the fields the
    patch reached are checked (`decode_touched`); otherwise, or without them, the whole object is.
    """
    tree = kind_tree(*gvk)
    if tree is None:
        return patched, list(patch_strict_errors) if mode == WARN else []
    # kube quotes what the patch produced, before pruning: keep a cheap snapshot, render it only on error
    if shown is None:
        try:
            snapshot = orjson.dumps(patched)
        except TypeError:  # a value orjson cannot hold (an integer beyond 64 bits): render it now
            shown = go_json(patched)

    def quoted() -> str:
        return shown if shown is not None else go_json(orjson.loads(snapshot))

    try:
        if content_type in MERGING_PATCHES and isinstance(patch, dict):
            pruned, strict_errors = decode_touched(tree, patched, patch)
        else:
            pruned, strict_errors = decode(tree, patched)
    except DecodeError as exc:
        raise _invalid_patch(quoted(), str(exc)) from None
    found = list(patch_strict_errors) + strict_errors
    if found and mode == STRICT:
        raise _invalid_patch(quoted(), strict_decoding_error(found))
    return pruned, found if mode == WARN else []


def patch_errors(content_type: str, raw_patch: bytes, mode: str) -> list[str]:
    """Strict errors in a patch document: duplicate keys anywhere, and unknown keys in JSON patch operations
    (reported as `json patch unknown field "[0].foo"`). Empty under Ignore."""
    if mode == IGNORE:
        return []
    try:
        patch = loads_marking_duplicates(raw_patch)
    except ValueError:
        return []  # the patch decoder reports malformed patches
    if content_type == JSON_PATCH and isinstance(patch, list):
        return [f"json patch {error}" for error in untyped_strict_errors(patch, "", JSON_PATCH_OP_FIELDS)]
    return untyped_strict_errors(patch) if has_duplicates(patch) else []


def check_unknown_fields(gvk: GVK, unknown_paths: list[str], mode: str) -> list[str]:
    """Report fields a custom resource's schema prunes, as typed decoding reports unknown fields: 400 under
    Strict, warnings under Warn, nothing under Ignore."""
    strict_errors = [f'unknown field "{path}"' for path in unknown_paths]
    if strict_errors and mode == STRICT:
        raise _cannot_handle(gvk[2], gvk[1], strict_decoding_error(strict_errors))
    return strict_errors if mode == WARN else []


def strict_decoding_error(strict_errors: list[str]) -> str:
    return "strict decoding error: " + ", ".join(strict_errors)


def warning_header(text: str) -> str:
    """One `Warning` response header value (RFC 7234 warn-code 299, no agent), as kube writes it."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{escaped}"'


def _cannot_handle(kind: str, version: str, detail: str) -> errors.APIError:
    return errors.bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {detail}')


def _invalid_patch(shown: str, detail: str) -> errors.APIError:
    body = f"Invalid value: {json.dumps(shown, ensure_ascii=False)}: {detail}"
    cause = {"reason": "FieldValueInvalid", "message": body, "field": "patch"}
    return errors.APIError(422, "Invalid", f' "" is invalid: patch: {body}', {"causes": [cause]})
