"""A container's environment and its expanded command and args (kube's `kubelet_pods.go: makeEnvironmentVariables`
and `expansion`).

    env = await container_env(pod, container, objects, node_allocatable)
    command, args = expand_command(container, env)

Order and precedence as in kube: first `envFrom` (configMaps and secrets, with `prefix`), then `env` in order, a
later variable overriding an earlier one of the same name. `$(NAME)` in a value, command or arg is replaced by
a variable defined before it (`$$` is a literal `$`; an undefined reference stays as written).

Usage rules: `objects` fetches ConfigMaps and Secrets (and caches them); a missing object or key that is not
`optional` raises `ContainerConfigError` with kube's message, which the kubelet reports as the container's
`CreateContainerConfigError`.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Awaitable, Callable
from fractions import Fraction
from typing import Any

from minikube_py.api.validation.quantity import parse_quantity

# Fetches ("configmaps"|"secrets", namespace, name); None when the object does not exist.
ObjectGetter = Callable[[str, str, str], Awaitable[dict[str, Any] | None]]

_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class ContainerConfigError(Exception):
    """The container cannot be configured yet (a missing ConfigMap, Secret or key)."""


async def container_env(pod: dict[str, Any], container: dict[str, Any], objects: ObjectGetter,
                        node_allocatable: dict[str, str]) -> dict[str, str]:
    namespace = pod["metadata"].get("namespace", "default")
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        for kind, key in (("configmaps", "configMapRef"), ("secrets", "secretRef")):
            ref = source.get(key)
            if ref is None:
                continue
            data = await _object_data(objects, kind, namespace, ref.get("name", ""), ref.get("optional", False))
            for name, value in (data or {}).items():
                env[prefix + name] = value
    for var in container.get("env") or []:
        name = var.get("name", "")
        if "valueFrom" in var:
            value = await _value_from(var["valueFrom"], pod, container, objects, node_allocatable)
            if value is None:  # an optional reference to something absent: no variable at all
                continue
            env[name] = value
        else:
            env[name] = expand(var.get("value", ""), env)
    return env


def expand_command(container: dict[str, Any], env: dict[str, str]) -> tuple[list[str], list[str]]:
    return ([expand(part, env) for part in container.get("command") or []],
            [expand(part, env) for part in container.get("args") or []])


def expand(text: str, env: dict[str, str]) -> str:
    """Replace `$(NAME)` with env[NAME] when defined; `$$` becomes `$`."""
    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env[name] if name in env else match.group(0)
    return _REFERENCE.sub(replace, text)


async def _value_from(source: dict[str, Any], pod: dict[str, Any], container: dict[str, Any],
                      objects: ObjectGetter, node_allocatable: dict[str, str]) -> str | None:
    namespace = pod["metadata"].get("namespace", "default")
    if "fieldRef" in source:
        return field_value(pod, source["fieldRef"].get("fieldPath", ""))
    if "resourceFieldRef" in source:
        return resource_value(container, source["resourceFieldRef"], node_allocatable)
    for kind, key, label in (("configmaps", "configMapKeyRef", "ConfigMap"), ("secrets", "secretKeyRef", "Secret")):
        ref = source.get(key)
        if ref is None:
            continue
        optional = ref.get("optional", False)
        data = await _object_data(objects, kind, namespace, ref.get("name", ""), optional)
        if data is None:
            return None
        if ref.get("key") not in data:
            if optional:
                return None
            raise ContainerConfigError(f"couldn't find key {ref.get('key')} in {label} {namespace}/{ref.get('name')}")
        return data[ref["key"]]
    return ""


def field_value(pod: dict[str, Any], path: str) -> str:
    """A downward-API field of the pod (also used by downwardAPI volumes)."""
    metadata, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    subscript = re.fullmatch(r"metadata\.(labels|annotations)\['(.*)'\]", path)
    if subscript:
        return (metadata.get(subscript.group(1)) or {}).get(subscript.group(2), "")
    if path in ("metadata.labels", "metadata.annotations"):
        values = metadata.get(path.split(".")[1]) or {}
        return "\n".join(f'{key}="{value}"' for key, value in sorted(values.items()))
    simple = {
        "metadata.name": metadata.get("name", ""), "metadata.namespace": metadata.get("namespace", ""),
        "metadata.uid": metadata.get("uid", ""), "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.hostIP": status.get("hostIP", ""), "status.podIP": status.get("podIP", ""),
        "status.hostIPs": ",".join(ip.get("ip", "") for ip in status.get("hostIPs") or []),
        "status.podIPs": ",".join(ip.get("ip", "") for ip in status.get("podIPs") or []),
    }
    return simple.get(path, "")


def resource_value(container: dict[str, Any], ref: dict[str, Any], node_allocatable: dict[str, str]) -> str:
    """`limits.cpu`, `requests.memory`, ... of a container, divided by `divisor` and rounded up, as kube does; a
    missing limit is the node's allocatable amount."""
    which, _, resource = ref.get("resource", "").partition(".")
    resources = (container.get("resources") or {}).get(which) or {}
    raw = resources.get(resource)
    if raw is None:
        raw = node_allocatable.get(resource, "0") if which == "limits" else "0"
    amount = parse_quantity(raw)
    divisor = parse_quantity(ref.get("divisor") or "1") or Fraction(1)
    return str(math.ceil(amount / divisor))


async def _object_data(objects: ObjectGetter, kind: str, namespace: str, name: str,
                       optional: bool) -> dict[str, str] | None:
    obj = await objects(kind, namespace, name)
    label = "configmap" if kind == "configmaps" else "secret"
    if obj is None:
        if optional:
            return None
        raise ContainerConfigError(f'{label} "{name}" not found')
    return object_data(obj)


def object_data(obj: dict[str, Any]) -> dict[str, str]:
    """A ConfigMap's or Secret's values as text (what environment variables get)."""
    return {key: value.decode(errors="replace") for key, value in object_bytes(obj).items()}


def object_bytes(obj: dict[str, Any]) -> dict[str, bytes]:
    """A ConfigMap's or Secret's values as bytes (what volume files get): a Secret's `data` and a ConfigMap's
    `binaryData` are base64, a ConfigMap's `data` is text."""
    if obj.get("kind") == "Secret":
        return {key: base64.b64decode(value) for key, value in (obj.get("data") or {}).items()}
    data = {key: str(value).encode() for key, value in (obj.get("data") or {}).items()}
    for key, value in (obj.get("binaryData") or {}).items():
        data[key] = base64.b64decode(value)
    return data
