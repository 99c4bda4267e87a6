"""The local cloud's `--cloud-config`: a small YAML file that `mkpy up` writes into the cluster directory.

    clusterName: mkpy                       # the cluster whose nodes are this cloud's VMs
    stateFile: /root/.local/share/mkpy/mkpy/cloud/state.json
    region: local
    zones: [local-a, local-b]               # VMs are placed in these zones in turn
    instanceType: local.standard            # what node.kubernetes.io/instance-type says
    loadBalancerCIDR: 127.0.100.0/24        # addresses load balancers listen on (loopback: no host setup)
    healthCheckInterval: 2                  # seconds between two TCP checks of a load balancer's backends

Every key but `clusterName` and `stateFile` has the default shown. Usage rules: unknown keys and wrong types
are errors (`InvalidCloudConfig`, one line naming the key), so a typo never silently falls back to a default.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from minikube_py.ccm.cloud.interface import InvalidCloudConfig

KEYS = {"clusterName": "cluster_name", "stateFile": "state_file", "region": "region", "zones": "zones",
        "instanceType": "instance_type", "loadBalancerCIDR": "load_balancer_cidr",
        "healthCheckInterval": "health_check_interval"}


@dataclass(frozen=True)
class LocalCloudConfig:
    cluster_name: str
    state_file: Path
    region: str = "local"
    zones: tuple[str, ...] = ("local-a", "local-b")
    instance_type: str = "local.standard"
    load_balancer_cidr: ipaddress.IPv4Network = field(
        default_factory=lambda: ipaddress.IPv4Network("127.0.100.0/24"))
    health_check_interval: float = 2.0


def parse(text: str | None) -> LocalCloudConfig:
    """The config in `text` (the `--cloud-config` file's content); InvalidCloudConfig when it is unusable."""
    if text is None:
        raise InvalidCloudConfig("the local cloud needs --cloud-config (clusterName and stateFile at least)")
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise InvalidCloudConfig(f"cloud config is not YAML: {error}".splitlines()[0]) from None
    if not isinstance(raw, dict):
        raise InvalidCloudConfig("cloud config must be a YAML mapping")
    unknown = sorted(set(raw) - KEYS.keys())
    if unknown:
        raise InvalidCloudConfig(f"cloud config: unknown key(s) {', '.join(unknown)}; known: {', '.join(KEYS)}")
    values: dict[str, Any] = {}
    for key in ("clusterName", "stateFile", "region", "instanceType"):
        if key in raw:
            values[KEYS[key]] = _string(raw, key)
    for key in ("clusterName", "stateFile"):
        if key not in raw:
            raise InvalidCloudConfig(f"cloud config: {key} is required")
    values["state_file"] = Path(values["state_file"])
    if "zones" in raw:
        zones = raw["zones"]
        if not isinstance(zones, list) or not zones or not all(isinstance(z, str) and z for z in zones):
            raise InvalidCloudConfig("cloud config: zones must be a non-empty list of names")
        values["zones"] = tuple(zones)
    if "loadBalancerCIDR" in raw:
        try:
            values["load_balancer_cidr"] = ipaddress.IPv4Network(_string(raw, "loadBalancerCIDR"))
        except ValueError as error:
            raise InvalidCloudConfig(f"cloud config: loadBalancerCIDR: {error}") from None
    if "healthCheckInterval" in raw:
        interval = raw["healthCheckInterval"]
        if isinstance(interval, bool) or not isinstance(interval, int | float) or interval <= 0:
            raise InvalidCloudConfig("cloud config: healthCheckInterval must be a positive number of seconds")
        values["health_check_interval"] = float(interval)
    return LocalCloudConfig(**values)


def render(config: LocalCloudConfig) -> str:
    """The YAML text of `config` (what `mkpy up` writes)."""
    return yaml.safe_dump({
        "clusterName": config.cluster_name, "stateFile": str(config.state_file), "region": config.region,
        "zones": list(config.zones), "instanceType": config.instance_type,
        "loadBalancerCIDR": str(config.load_balancer_cidr), "healthCheckInterval": config.health_check_interval,
    }, sort_keys=False)


def _string(raw: dict[str, Any], key: str) -> str:
    value = raw[key]
    if not isinstance(value, str) or not value:
        raise InvalidCloudConfig(f"cloud config: {key} must be a non-empty string")
    return value
