"""The Node printer: STATUS from the Ready condition, ROLES from labels, and the node's system info.

STATUS is `Ready`, `NotReady` (Ready condition present but not True) or `Unknown` (no Ready condition,
e.g. a node whose kubelet never reported), followed by `,SchedulingDisabled` for a cordoned node.
ROLES are the suffixes of `node-role.kubernetes.io/<role>` labels plus the value of a
`kubernetes.io/role` label, sorted, or `<none>`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.printers.base import AGE, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import age, condition_status

_ROLE_LABEL_PREFIX = "node-role.kubernetes.io/"
_LEGACY_ROLE_LABEL = "kubernetes.io/role"


def node_status(node: dict[str, Any]) -> str:
    ready = condition_status((node.get("status") or {}).get("conditions"), "Ready")
    states = ["Unknown" if ready is None else "Ready" if ready == "True" else "NotReady"]
    if (node.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    return ",".join(states)


def node_roles(labels: dict[str, str] | None) -> str:
    roles = set()
    for key, value in (labels or {}).items():
        if key.startswith(_ROLE_LABEL_PREFIX) and key != _ROLE_LABEL_PREFIX:
            roles.add(key.removeprefix(_ROLE_LABEL_PREFIX))
        elif key == _LEGACY_ROLE_LABEL and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"


def _address(status: dict[str, Any], address_type: str) -> str:
    """The first address of a type (`InternalIP`, `ExternalIP`), `<none>` without one."""
    for address in status.get("addresses") or []:
        if address.get("type") == address_type:
            return str(address.get("address", ""))
    return "<none>"


def _node_cells(node: dict[str, Any], now: datetime) -> list[Cell]:
    metadata, status = node.get("metadata") or {}, node.get("status") or {}
    info = status.get("nodeInfo") or {}
    return [
        metadata.get("name", ""), node_status(node), node_roles(metadata.get("labels")), age(node, now),
        info.get("kubeletVersion", ""), _address(status, "InternalIP"), _address(status, "ExternalIP"),
        info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


_ADDRESSES_DOC = (
    "List of addresses reachable to the node. Queried from cloud provider, if available. More info: "
    "https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as "
    "mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is "
    "merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an "
    "example. Consumers should assume that addresses can change during the lifetime of a Node. However, "
    "there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in "
    "its own status or consumers of the downward API (status.hostIP)."
)

NODE = Printer(
    (
        NAME,
        Column("Status", "The status of the node"),
        Column("Roles", "The roles of the node"),
        AGE,
        Column("Version", "Kubelet Version reported by the node."),
        Column("Internal-IP", _ADDRESSES_DOC, priority=1),
        Column("External-IP", _ADDRESSES_DOC, priority=1),
        Column("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 "
                           "(wheezy)).", priority=1),
        Column("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. "
                                 "3.16.0-0.bpo.4-amd64).", priority=1),
        Column("Container-Runtime", "ContainerRuntime Version reported by the node through runtime remote "
                                    "API (e.g. containerd://1.4.2).", priority=1),
    ),
    _node_cells,
)

PRINTERS = {("", "v1", "Node"): NODE}
