"""The Service strategy: cluster IPs and node ports claimed on create, carried over on update, released on
delete.

A Service of type ClusterIP, NodePort or LoadBalancer gets a cluster IP from the service CIDR (an explicit
`spec.clusterIP` is claimed as given; `None` makes a headless service); NodePort and LoadBalancer services
also get a node port per service port. (An update that leaves `clusterIP` or a `nodePort` empty keeps the allocated
value; that carry-over is in `api/defaults`.)
"""

from __future__ import annotations

from typing import Any

from ...api import errors
from .allocator import AllocationError, Range
from .strategy import Strategy, Undo

_NODE_PORT_TYPES = ("NodePort", "LoadBalancer")


def _owner(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def _wants_cluster_ip(spec: dict[str, Any]) -> bool:
    return spec.get("type", "ClusterIP") != "ExternalName" and spec.get("clusterIP") != "None"


def _node_ports(obj: dict[str, Any]) -> list[str]:
    spec = obj.get("spec") or {}
    return [str(p["nodePort"]) for p in spec.get("ports") or [] if p.get("nodePort")]


class ServiceStrategy(Strategy):
    def __init__(self, resource: Any, ips: Range, ports: Range) -> None:
        super().__init__(resource)
        self.ips, self.ports = ips, ports

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        obj["status"] = {"loadBalancer": {}}

    async def before_create(self, obj: dict[str, Any], dry_run: bool) -> Undo:
        if dry_run:  # the same answer as a real create, but nothing claimed
            await self._claim_cluster_ip(obj, [], dry_run=True)
            await self._claim_node_ports(obj, [], dry_run=True)
            return None
        claimed: list[tuple[Range, str]] = []

        async def undo() -> None:
            for rng, value in claimed:
                await rng.release(value, _owner(obj))

        try:
            await self._claim_cluster_ip(obj, claimed)
            await self._claim_node_ports(obj, claimed)
        except BaseException:
            await undo()
            raise
        return undo

    async def before_update(self, new: dict[str, Any], old: dict[str, Any], dry_run: bool) -> None:
        claimed: list[tuple[Range, str]] = []
        try:
            if not (old.get("spec") or {}).get("clusterIP") or (old.get("spec") or {}).get("clusterIP") == "None":
                await self._claim_cluster_ip(new, claimed, dry_run=dry_run)
            await self._claim_node_ports(new, claimed, already=set(_node_ports(old)), dry_run=dry_run)
        except BaseException:
            for rng, value in claimed:
                await rng.release(value, _owner(new))
            raise

    async def after_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        for port in set(_node_ports(old)) - set(_node_ports(new)):
            await self.ports.release(port, _owner(old))
        old_ip, new_ip = (old.get("spec") or {}).get("clusterIP"), (new.get("spec") or {}).get("clusterIP")
        if old_ip and old_ip != "None" and old_ip != new_ip:
            await self.ips.release(old_ip, _owner(old))

    async def after_delete(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec") or {}
        ip = spec.get("clusterIP")
        if ip and ip != "None":
            await self.ips.release(ip, _owner(obj))
        for port in _node_ports(obj):
            await self.ports.release(port, _owner(obj))

    async def _claim_cluster_ip(self, obj: dict[str, Any], claimed: list[tuple[Range, str]],
                                dry_run: bool = False) -> None:
        spec = obj.setdefault("spec", {})
        if not _wants_cluster_ip(spec):
            if spec.get("type") == "ExternalName":
                spec.pop("clusterIP", None)
                spec.pop("clusterIPs", None)
            else:
                spec["clusterIPs"] = ["None"]
            return
        wanted = spec.get("clusterIP") or ""
        if dry_run and not wanted:
            return  # kube shows a placeholder address here; nothing would be picked yet
        try:
            if dry_run:
                await self.ips.check(wanted, _owner(obj))
                new, ip = False, wanted
            elif wanted:
                new = await self.ips.allocate(wanted, _owner(obj))
                ip = wanted
            else:
                ip, new = await self.ips.allocate_next(_owner(obj)), True
        except AllocationError as exc:
            raise self._invalid(obj, "spec.clusterIPs", [wanted], f"failed to allocate IP {wanted}: {exc}") from None
        if new:  # only what this request claimed is its to give back
            claimed.append((self.ips, ip))
        spec["clusterIP"], spec["clusterIPs"] = ip, [ip]

    async def _claim_node_ports(self, obj: dict[str, Any], claimed: list[tuple[Range, str]],
                                already: set[str] = frozenset(),  # type: ignore[assignment]
                                dry_run: bool = False) -> None:
        spec = obj.get("spec") or {}
        if spec.get("type") not in _NODE_PORT_TYPES:
            return
        for i, port in enumerate(spec.get("ports") or []):
            wanted = str(port.get("nodePort") or "")
            if (wanted and wanted in already) or (dry_run and not wanted):
                continue
            try:
                if dry_run:
                    await self.ports.check(wanted, _owner(obj))
                    new, value = False, wanted
                elif wanted:
                    new = await self.ports.allocate(wanted, _owner(obj))
                    value = wanted
                else:
                    value, new = await self.ports.allocate_next(_owner(obj)), True
            except AllocationError as exc:
                raise self._invalid(obj, f"spec.ports[{i}].nodePort", int(wanted) if wanted else 0, str(exc)) from None
            if new:
                claimed.append((self.ports, value))
            port["nodePort"] = int(value)

    @staticmethod
    def _invalid(obj: dict[str, Any], path: str, value: Any, why: str) -> errors.APIError:
        name = obj["metadata"]["name"]
        return errors.invalid_object("Service", "", name, [errors.invalid(path, value, why)])
