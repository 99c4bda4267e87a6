"""The order in which a scheduling cycle visits nodes: grouped by zone, taken round-robin across zones
(kube's `nodeTree`).

The cache keeps one NodeTree of the nodes it knows. When the set of nodes changes, the snapshot's node list
is rebuilt from `NodeTree.list()`: the first node of every zone, then the second of every zone, and so on.
Because the scheduler filters only until it has enough feasible nodes (percentageOfNodesToScore), this order
spreads the nodes it looks at over all zones instead of exhausting one zone first.

A node's zone key combines its region and zone labels (`topology.kubernetes.io/region` / `zone`, falling back
to the deprecated `failure-domain.beta.kubernetes.io/*` labels); nodes with neither share the zone "".

Usage rules: only the cache calls the mutators; nodes are plain API dicts and are never modified here. Zones
are listed in the order they first appeared, nodes within a zone in the order they were added.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

log = logging.getLogger("mkpy.scheduler.nodetree")

ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")

Node = dict[str, Any]


def zone_key(node: Node) -> str:
    """The node's region and zone as one key ("" when it has neither label)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    zone = next((labels[label] for label in ZONE_LABELS if label in labels), "")
    region = next((labels[label] for label in REGION_LABELS if label in labels), "")
    if not zone and not region:
        return ""
    # A NUL can appear in neither label value, so the pair cannot be confused with another pair.
    return f"{region}:\x00:{zone}"


def _name(node: Node) -> str:
    return (node.get("metadata") or {}).get("name", "")


class NodeTree:
    """Node names grouped by zone key; `list()` interleaves the zones."""

    def __init__(self, nodes: Iterable[Node] = ()) -> None:
        self._zones: dict[str, list[str]] = {}  # dicts keep insertion order: zones in order of appearance
        self.num_nodes = 0
        for node in nodes:
            self.add_node(node)

    def add_node(self, node: Node) -> None:
        names = self._zones.setdefault(zone_key(node), [])
        name = _name(node)
        if name in names:
            log.debug("node %s is already in the node tree", name)
            return
        names.append(name)
        self.num_nodes += 1

    def remove_node(self, node: Node) -> bool:
        """Drop the node; False (and a log line) when it was not in its zone."""
        key, name = zone_key(node), _name(node)
        names = self._zones.get(key)
        if names is None or name not in names:
            log.warning("node %s in zone %r was not found in the node tree", name, key.replace("\x00", ""))
            return False
        names.remove(name)
        if not names:
            del self._zones[key]
        self.num_nodes -= 1
        return True

    def update_node(self, old: Node | None, new: Node) -> None:
        """Move the node when its zone labels changed; a node's name never changes."""
        if old is not None and zone_key(old) == zone_key(new):
            return
        if old is not None:
            self.remove_node(old)
        self.add_node(new)

    def list(self) -> Sequence[str]:
        """Every node name, round-robin across zones: each zone's first node, then each zone's second, …"""
        zones = list(self._zones.values())
        result: list[str] = []
        index = 0
        while len(result) < self.num_nodes:
            result.extend(names[index] for names in zones if index < len(names))
            index += 1
        return result
