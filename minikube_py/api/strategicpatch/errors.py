"""Why a strategic merge patch fails, and what kube-apiserver answers for each reason.

apimachinery's merge code fails with plain Go errors. kube-apiserver's PATCH handler
(`interpretStrategicMergePatchError`) recognises a few of them: malformed `$deleteFromPrimitiveList`,
`$retainKeys` and `$setElementOrder` directives are 400 BadRequest with the error text, a list of lists is
422 Invalid with a fixed text. Every other error reaches the client unconverted, as a 500 whose reason is
empty (kube's `StatusReasonUnknown`) and whose message is the Go error text — kubectl prints it as
`Error from server: map: map[image:nginx] does not contain declared merge key: name`. The constructors
below keep those texts word for word.
"""

from __future__ import annotations

from typing import Any

from ..errors import APIError, bad_request
from ..gofmt import go_quote, go_v
from .values import go_string, go_type


def unsupported_format() -> APIError:
    return bad_request("strategic merge patch format is not supported")


def bad_format_for_primitive_list() -> APIError:
    return bad_request("invalid patch format of primitive list")


def bad_format_for_retain_keys() -> APIError:
    return bad_request("invalid patch format of retainKeys")


def bad_format_for_set_element_order_list() -> APIError:
    return bad_request("invalid patch format of setElementOrder list")


def no_list_of_lists() -> APIError:
    # kube answers with the generic 422 text and drops "lists of lists are not supported".
    return APIError(422, "Invalid", "the server rejected our request due to an error in our request", {})


def failure(message: str) -> APIError:
    """Any other merge error: kube lets it through as a 500 with an empty reason."""
    return APIError(500, "", message, {})


def no_merge_key(item: dict[str, Any], merge_key: str) -> APIError:
    return failure(f"map: {go_v(item)} does not contain declared merge key: {merge_key}")


def bad_arg_type(expected: str, actual: Any) -> APIError:
    return failure(f"expected a {expected}, but received a {go_type(actual)}")


def bad_patch_type(directive: Any, item: dict[str, Any]) -> APIError:
    return failure(f"unknown patch type: {go_string(directive)} in map: {go_v(item)}")


def merge_directive_in_list() -> APIError:
    return failure("merging lists cannot yet be specified in the patch")


def no_merge_key_declared(element_kind: str) -> APIError:
    return failure(f"cannot merge lists without merge key for {element_kind}")


def mixed_element_types(lists: list[list[Any]]) -> APIError:
    return failure(f"list element types are not identical: {go_v(lists)}")


def no_elements() -> APIError:
    return failure("no elements in any of the given slices")


def not_a_map(index: int) -> APIError:
    return failure(f"value for key {index} is not a map")


def order_mismatch(patch_list: list[Any], order: list[Any]) -> APIError:
    return failure(f"The order in patch list:\n{go_v(patch_list)}\n doesn't match $setElementOrder list:\n"
                   f"{go_v(order)}\n")


def field_not_found(struct_name: str, field: str) -> APIError:
    return failure(f"unable to find api field in struct {struct_name} for the json field {go_quote(field)}")


def not_a_struct(kind: str) -> APIError:
    return failure(f"merging an object in json but data type is not struct, instead is: {kind}")


def not_a_slice() -> APIError:
    return failure("expected slice or array type, but got: struct")
