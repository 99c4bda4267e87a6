"""The EndpointSlice printer (discovery.k8s.io/v1).

PORTS lists port numbers (the port's name when it has no number, `*` for "all ports"), ENDPOINTS the
endpoints' addresses; each shows the first three and `+ N more...`, or `<unset>` when empty.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.printers.base import AGE, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import age, list_with_more, object_name


def _port(port: dict[str, Any]) -> str:
    if port.get("port") is not None:
        return str(port["port"])
    return port["name"] if port.get("name") is not None else "*"


def _endpoint_slice_cells(endpoint_slice: dict[str, Any], now: datetime) -> list[Cell]:
    ports = [_port(port) for port in endpoint_slice.get("ports") or []]
    addresses = [address for endpoint in endpoint_slice.get("endpoints") or []
                 for address in endpoint.get("addresses") or []]
    return [
        object_name(endpoint_slice), endpoint_slice.get("addressType", ""),
        list_with_more(ports), list_with_more(addresses), age(endpoint_slice, now),
    ]


ENDPOINT_SLICE = Printer(
    (
        NAME,
        Column("AddressType", "addressType specifies the type of address carried by this EndpointSlice. All "
                              "addresses in this slice must be the same type. This field is immutable after "
                              "creation. The following address types are currently supported: * IPv4: "
                              "Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: "
                              "Represents a Fully Qualified Domain Name."),
        Column("Ports", "ports specifies the list of network ports exposed by each endpoint in this slice. "
                        "Each port must have a unique name. When ports is empty, it indicates that there are "
                        "no defined ports. When a port is defined with a nil port value, it indicates \"all "
                        "ports\". Each slice may include a maximum of 100 ports."),
        Column("Endpoints", "endpoints is a list of unique endpoints in this slice. Each slice may include a "
                            "maximum of 1000 endpoints."),
        AGE,
    ),
    _endpoint_slice_cells,
)

PRINTERS = {("discovery.k8s.io", "v1", "EndpointSlice"): ENDPOINT_SLICE}
