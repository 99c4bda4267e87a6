"""ClusterIP and NodePort allocation for Services: one etcd key per address, so never a duplicate.

Every allocated address is a key of its own, `/registry/ranges/serviceips/<ip>` or
`/registry/ranges/servicenodeports/<port>`, written with a create-if-absent transaction and holding the
owning service (`namespace/name`). Two apiservers (or two concurrent requests) racing for the same address
cannot both win, and the allocation survives restarts because it lives in etcd, beside the services. (This
is the shape of kube's newer IPAddress-object allocator; the older one kept a bitmap in a single key.)

A service asks for a specific address or for any free one; a free one is picked at random and retried on
collision, as kube does.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Callable

from ...store.errors import ConflictError, KeyExistsError, KeyNotFoundError
from ...store.interface import Storage

IP_PREFIX = "/registry/ranges/serviceips/"
PORT_PREFIX = "/registry/ranges/servicenodeports/"
_ATTEMPTS = 64


class AllocationError(Exception):
    pass


class Range:
    """A contiguous set of allocatable values (IPs or ports) backed by one etcd key per value.

    Values are kept as offsets into the range, so a /12 service CIDR costs nothing until used.
    """

    def __init__(self, storage: Storage, prefix: str, first: int, size: int,
                 render: Callable[[int], str], parse: Callable[[str], int | None]) -> None:
        self.storage, self.prefix = storage, prefix
        self.first, self.size = first, size
        self.render, self.parse = render, parse

    def contains(self, value: str) -> bool:
        number = self.parse(value)
        return number is not None and self.first <= number < self.first + self.size

    async def allocate(self, value: str, owner: str) -> bool:
        """Claim `value` for `owner`: True if newly claimed, False if `owner` already held it."""
        if not self.contains(value):
            raise AllocationError(f"provided {value} is not in the valid range")
        if await self._try_create(value, owner):
            return True
        current = await self.storage.get(self.prefix + value)
        if current is None or current.value.decode() != owner:
            raise AllocationError("provided value is already allocated")
        return False

    async def check(self, value: str, owner: str) -> None:
        """What `allocate` would say about `value`, without claiming it (for dry runs)."""
        if not self.contains(value):
            raise AllocationError(f"provided {value} is not in the valid range")
        current = await self.storage.get(self.prefix + value)
        if current is not None and current.value.decode() != owner:
            raise AllocationError("provided value is already allocated")

    async def allocate_next(self, owner: str) -> str:
        for _ in range(_ATTEMPTS):
            value = self.render(self.first + random.randrange(self.size))
            if await self._try_create(value, owner):
                return value
        used = {kv.key[len(self.prefix):] for kv in (await self.storage.list(self.prefix)).items}
        for offset in range(self.size):
            value = self.render(self.first + offset)
            if value not in used and await self._try_create(value, owner):
                return value
        raise AllocationError("range is full")

    async def _try_create(self, value: str, owner: str) -> bool:
        try:
            await self.storage.create(self.prefix + value, owner.encode())
            return True
        except KeyExistsError:
            return False

    async def release(self, value: str, owner: str) -> None:
        current = await self.storage.get(self.prefix + value)
        if current is not None and current.value.decode() == owner:
            try:
                await self.storage.delete(self.prefix + value, expected_revision=current.mod_revision)
            except (ConflictError, KeyNotFoundError):
                pass  # someone else released or re-claimed it meanwhile


def _parse_ip(value: str) -> int | None:
    try:
        return int(ipaddress.ip_address(value))
    except ValueError:
        return None


def _parse_port(value: str) -> int | None:
    return int(value) if value.isdigit() else None


def service_ip_range(storage: Storage, cidr: str) -> Range:
    network = ipaddress.ip_network(cidr, strict=False)
    version = network.version
    # neither the network address nor (for IPv4) the broadcast address is handed out
    first = int(network.network_address) + 1
    size = network.num_addresses - (2 if version == 4 else 1)
    return Range(storage, IP_PREFIX, first, size, lambda n: str(ipaddress.ip_address(n)), _parse_ip)


def node_port_range(storage: Storage, spec: str) -> Range:
    try:
        low, high = (int(p) for p in spec.split("-", 1))
    except ValueError:
        raise ValueError(f"invalid service node port range {spec!r}, want e.g. 30000-32767") from None
    return Range(storage, PORT_PREFIX, low, high - low + 1, str, _parse_port)
