"""Parsers for kube-style flag values, as click parameter types shared by the component commands.

Kubernetes components take Go-flavoured values: durations like `5m0s` or `1h30m`, comma-separated lists
(`--etcd-servers=http://a:2379,http://b:2379`), CIDRs and port ranges. `mkpy apiserver` (and later
`mkpy scheduler`, `mkpy controller-manager`, ...) declare their flags with these types, so a bad value is
reported by click as a one-line usage error naming the flag, before anything starts.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import urlsplit

import click

_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in a Go duration (`300ms`, `5m0s`, `1.5h`); a bare number means seconds. Negative is refused."""
    text = text.strip()
    if re.fullmatch(r"\d+(?:\.\d*)?", text):
        return float(text)
    if not text or _DURATION_PART.sub("", text) != "":
        raise ValueError(f"invalid duration {text!r} (expected e.g. 300ms, 30s, 5m0s, 1h)")
    return sum(float(number) * _DURATION_UNITS[unit] for number, unit in _DURATION_PART.findall(text))


class Duration(click.ParamType):
    """A Go duration, converted to seconds (float)."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            return float(value)
        try:
            return parse_duration(value)
        except ValueError as err:
            self.fail(str(err), param, ctx)


class URLList(click.ParamType):
    """Comma-separated http(s)://host:port URLs, e.g. the members of an etcd cluster."""

    name = "urls"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[str]:
        if isinstance(value, list):
            return value
        urls = [url.strip() for url in value.split(",") if url.strip()]
        if not urls:
            self.fail("expected at least one URL", param, ctx)
        for url in urls:
            parts = urlsplit(url)
            try:
                port = parts.port
            except ValueError:
                port = None
            if parts.scheme not in ("http", "https") or not parts.hostname or port is None:
                self.fail(f"{url!r} is not an http(s)://host:port URL", param, ctx)
        return urls


class StringList(click.ParamType):
    """Comma-separated names (`--authorization-mode=Node,RBAC`), optionally limited to `choices`."""

    name = "list"

    def __init__(self, choices: tuple[str, ...] = ()) -> None:
        self.choices = choices

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[str]:
        if isinstance(value, list):
            return value
        items = [item.strip() for item in value.split(",") if item.strip()]
        bad = [item for item in items if self.choices and item not in self.choices]
        if bad:
            self.fail(f"{bad[0]!r} is not one of {', '.join(self.choices)}", param, ctx)
        return items


class IPAddress(click.ParamType):
    """An IPv4 or IPv6 address, kept as text."""

    name = "ip"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            self.fail(f"{value!r} is not an IP address", param, ctx)


class CIDR(click.ParamType):
    """A network in CIDR notation (`10.96.0.0/12`), kept as text."""

    name = "cidr"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return str(ipaddress.ip_network(value, strict=True))
        except ValueError as err:
            self.fail(f"{value!r} is not a network in CIDR notation: {err}", param, ctx)


class PortRange(click.ParamType):
    """`first-last`, inclusive, within 1-65535 (the NodePort range), kept as text."""

    name = "range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        match = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", value)
        if not match or not 1 <= int(match[1]) <= int(match[2]) <= 65535:
            self.fail(f"{value!r} is not a port range like 30000-32767", param, ctx)
        return f"{int(match[1])}-{int(match[2])}"
