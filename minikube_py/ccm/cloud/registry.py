"""Finding a cloud provider by name (kube's `cloudprovider.RegisterCloudProvider` / `InitCloudProvider`).

`--cloud-provider NAME` is looked up, in this order:
1. the built-in providers in `BUILTIN` (`local`, `fake`), listed explicitly here (no import-time
   self-registration that could silently shadow one);
2. a Python entry point named NAME in the group `minikube_py.cloud_providers`, which an out-of-tree provider
   declares in its own package metadata:

       [project.entry-points."minikube_py.cloud_providers"]
       mycloud = "mycloud.provider:new_provider"

3. a `module:factory` path (NAME contains a colon), for a provider that is only a file on PYTHONPATH.

Each names a factory `factory(config: str | None) -> Interface` that receives the text of `--cloud-config`
(None without one) and raises `InvalidCloudConfig` when it cannot use it. Whatever goes wrong becomes a
`CloudProviderNotFound` or `InvalidCloudConfig` with a one-line message; an unknown name lists the available
providers.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

from minikube_py.ccm.cloud.interface import CloudProviderError, Interface, InvalidCloudConfig

ENTRY_POINT_GROUP = "minikube_py.cloud_providers"
BUILTIN = {
    "local": "minikube_py.ccm.cloud.local:new_provider",
    "fake": "minikube_py.ccm.cloud.fake:new_provider",
}

Factory = Callable[[str | None], Interface]


class CloudProviderNotFound(CloudProviderError):
    """`--cloud-provider` names no provider this process can load."""


def available() -> list[str]:
    """Every provider name `--cloud-provider` accepts without a module path: built-ins, then entry points."""
    plugged = sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)} - BUILTIN.keys())
    return [*BUILTIN, *plugged]


def factory(name: str) -> Factory:
    """The factory behind a provider name or `module:factory` path."""
    if name in BUILTIN:
        return _load(BUILTIN[name], name)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            try:
                return ep.load()
            except Exception as error:  # noqa: BLE001 - a broken plugin is the user's to fix: say why
                raise CloudProviderNotFound(f"cloud provider {name!r} (entry point {ep.value}) cannot be "
                                            f"loaded: {error}") from None
    if ":" in name:
        return _load(name, name)
    raise CloudProviderNotFound(f"unknown cloud provider {name!r}; available: {', '.join(available())} "
                                "(or module:factory)")


def get_cloud_provider(name: str, config_file: str = "") -> Interface:
    """Build the provider `name` with the `--cloud-config` file's text (none when `config_file` is "")."""
    config = None
    if config_file:
        try:
            config = Path(config_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise InvalidCloudConfig(f"--cloud-config {config_file}: {error}") from None
    make = factory(name)
    try:
        return make(config)
    except InvalidCloudConfig:
        raise
    except Exception as error:  # noqa: BLE001 - a factory's failure must be one line, not a traceback
        raise InvalidCloudConfig(f"cloud provider {name!r} could not start: {error}") from None


def _load(path: str, name: str) -> Factory:
    module_name, _, attr = path.partition(":")
    try:
        made = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as error:
        raise CloudProviderNotFound(f"cloud provider {name!r}: cannot load {path}: {error}") from None
    if not callable(made):
        raise CloudProviderNotFound(f"cloud provider {name!r}: {path} is not callable")
    return made
