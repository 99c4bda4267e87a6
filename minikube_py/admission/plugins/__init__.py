"""The admission plugins mkpy implements: an explicit table from kube's plugin name to its factory.

Each plugin is one module here. A factory takes the `ClusterState` and the apiserver's options and returns
the plugin. The chain's order is not this table's: it is `chain.ORDER`.
"""

from __future__ import annotations

from ..interface import PluginFactory
from .always import AlwaysAdmit, AlwaysDeny

PLUGINS: dict[str, PluginFactory] = {
    "AlwaysAdmit": lambda state, options: AlwaysAdmit(),
    "AlwaysDeny": lambda state, options: AlwaysDeny(),
}
