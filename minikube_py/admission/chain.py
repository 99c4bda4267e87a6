"""The admission chain: which plugins run, in which order, and running them.

kube-apiserver has one fixed order for all the plugins it knows, and flags that only switch plugins on
(`--enable-admission-plugins`) or off (`--disable-admission-plugins`) relative to a default set: the order
on the command line does not matter. We keep that model with the plugins mkpy has. `enabled_plugins`
resolves the flags; `AdmissionChain` runs every mutating plugin, in order, then (after the registry has
defaulted and validated the object) every validating plugin, in order. A plugin that is both runs in both
phases.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .interface import Attributes, ClusterState, MutatingPlugin, ValidatingPlugin
from .plugins import PLUGINS

# kube's order (a subset of its AllOrderedPlugins): a plugin later in the list sees what earlier ones did.
ORDER = (
    "AlwaysAdmit", "NamespaceLifecycle", "LimitRanger", "ServiceAccount", "NodeRestriction", "PodSecurity",
    "Priority", "DefaultTolerationSeconds", "DefaultStorageClass", "StorageObjectInUseProtection",
    "PersistentVolumeClaimResize", "MutatingAdmissionWebhook", "ValidatingAdmissionWebhook", "ResourceQuota",
    "AlwaysDeny",
)
# On unless disabled, as in kube (which leaves NodeRestriction off; kubeadm, and `mkpy up`, turn it on).
DEFAULT_ON = frozenset(ORDER) - {"AlwaysAdmit", "AlwaysDeny", "NodeRestriction"}


def known_plugins() -> list[str]:
    """The plugins mkpy implements, in chain order."""
    return [name for name in ORDER if name in PLUGINS]


def enabled_plugins(enable: Iterable[str], disable: Iterable[str]) -> list[str]:
    """The plugins to run, in chain order: the defaults, plus `enable`, minus `disable`.

    Raises ValueError naming any plugin mkpy does not know, or one both enabled and disabled.
    """
    enable, disable = list(enable), list(disable)
    unknown = sorted({name for name in enable + disable if name not in PLUGINS})
    if unknown:
        raise ValueError(f"unknown admission plugin(s): {', '.join(unknown)} "
                         f"(known: {', '.join(known_plugins())})")
    both = sorted(set(enable) & set(disable))
    if both:
        raise ValueError(f"admission plugin(s) both enabled and disabled: {', '.join(both)}")
    on = (DEFAULT_ON & set(PLUGINS)) | set(enable)
    return [name for name in ORDER if name in on and name not in disable]


class AdmissionChain:
    def __init__(self, plugins: Sequence[Any]) -> None:
        self.plugins = list(plugins)
        self.mutating: list[MutatingPlugin] = [p for p in self.plugins if hasattr(p, "admit")]
        self.validating: list[ValidatingPlugin] = [p for p in self.plugins if hasattr(p, "validate")]

    @classmethod
    def build(cls, names: Iterable[str], state: ClusterState, options: Any) -> AdmissionChain:
        return cls([PLUGINS[name](state, options) for name in names])

    @property
    def names(self) -> list[str]:
        return [plugin.name for plugin in self.plugins]

    async def admit(self, attributes: Attributes) -> bool:
        """The mutating phase: each mutating plugin that handles the operation, in order. True if any ran
        (then the object may have changed)."""
        ran = False
        for plugin in self.mutating:
            if plugin.handles(attributes.operation):
                await plugin.admit(attributes)
                ran = True
        return ran

    async def validate(self, attributes: Attributes) -> None:
        """The validating phase: each validating plugin that handles the operation, in order."""
        for plugin in self.validating:
            if plugin.handles(attributes.operation):
                await plugin.validate(attributes)
