"""A cluster CIDR cut into equal node CIDRs, and which of them are taken (kube's `ipam/cidrset`).

    cidrs = CIDRSet(ipaddress.ip_network("10.244.0.0/16"), 24)   # 256 node CIDRs of 256 addresses
    cidrs.occupy(ipaddress.ip_network("10.244.0.0/24"))           # a node already has it
    cidrs.allocate_next()                                          # 10.244.1.0/24
    cidrs.release(ipaddress.ip_network("10.244.0.0/24"))          # its node was deleted

Usage rules: node CIDRs are numbered from the start of the cluster CIDR; `allocate_next` hands out the first
free one at or after the last one handed out, wrapping around, so a CIDR just released is not reused at
once (a deleted node's pods may still hold its addresses for a while). `occupy` and `release` take any
network inside the cluster CIDR and mark every node CIDR it overlaps. Errors are `CIDRSetError` with
kube's messages.
"""

from __future__ import annotations

import ipaddress

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

MAX_PREFIX_DIFFERENCE = 16  # at most 65536 node CIDRs in one cluster CIDR


class CIDRSetError(ValueError):
    """A node mask that does not fit the cluster CIDR, a CIDR outside it, or no CIDR left."""


class CIDRSet:
    def __init__(self, cluster_cidr: Network, node_mask_size: int) -> None:
        if node_mask_size < cluster_cidr.prefixlen:
            raise CIDRSetError(f"the node CIDR mask size {node_mask_size} is smaller than the cluster CIDR's "
                               f"({cluster_cidr})")
        if node_mask_size > cluster_cidr.max_prefixlen:
            raise CIDRSetError(f"the node CIDR mask size {node_mask_size} is too long for {cluster_cidr}")
        if node_mask_size - cluster_cidr.prefixlen > MAX_PREFIX_DIFFERENCE:
            raise CIDRSetError("New CIDR set failed; the node CIDR size is too big")
        self.cluster_cidr = cluster_cidr
        self.node_mask_size = node_mask_size
        self.max_cidrs = 1 << (node_mask_size - cluster_cidr.prefixlen)
        self._used: set[int] = set()
        self._next_candidate = 0

    def __len__(self) -> int:
        """How many node CIDRs are taken."""
        return len(self._used)

    def allocate_next(self) -> Network:
        for step in range(self.max_cidrs):
            candidate = (self._next_candidate + step) % self.max_cidrs
            if candidate not in self._used:
                self._used.add(candidate)
                self._next_candidate = (candidate + 1) % self.max_cidrs
                return self._cidr(candidate)
        raise CIDRSetError("CIDR allocation failed; there are no remaining CIDRs left to allocate in the "
                           "accepted range")

    def occupy(self, cidr: Network) -> None:
        self._used.update(self._indices(cidr))

    def release(self, cidr: Network) -> None:
        self._used.difference_update(self._indices(cidr))

    def _cidr(self, index: int) -> Network:
        shift = self.cluster_cidr.max_prefixlen - self.node_mask_size
        address = int(self.cluster_cidr.network_address) + (index << shift)
        return ipaddress.ip_network((address, self.node_mask_size))

    def _indices(self, cidr: Network) -> range:
        """The node CIDRs `cidr` overlaps."""
        if cidr.version != self.cluster_cidr.version or not (
                cidr.subnet_of(self.cluster_cidr) or self.cluster_cidr.subnet_of(cidr)):  # type: ignore[arg-type]
            raise CIDRSetError(f"cidr {cidr} is out the range of cluster cidr {self.cluster_cidr}")
        shift = self.cluster_cidr.max_prefixlen - self.node_mask_size
        base = int(self.cluster_cidr.network_address)
        first = max(int(cidr.network_address), base)
        last = min(int(cidr.broadcast_address), int(self.cluster_cidr.broadcast_address))
        return range((first - base) >> shift, ((last - base) >> shift) + 1)
