"""The admission plugins mkpy implements: an explicit table from kube's plugin name to its factory.

Each plugin is one module here. A factory takes the `ClusterState` and the apiserver's options and returns
the plugin. The chain's order is not this table's: it is `chain.ORDER`.
"""

from __future__ import annotations

from ..interface import PluginFactory
from .always import AlwaysAdmit, AlwaysDeny
from .defaultstorageclass import DefaultStorageClass
from .defaulttolerationseconds import DefaultTolerationSeconds
from .limitranger import LimitRanger
from .namespacelifecycle import NamespaceLifecycle
from .noderestriction import NodeRestriction
from .persistentvolumeclaimresize import PersistentVolumeClaimResize
from .podsecurity import PodSecurity
from .priority import Priority
from .resourcequota import ResourceQuota
from .serviceaccount import ServiceAccount
from .storageobjectinuseprotection import StorageObjectInUseProtection
from .webhook import MutatingWebhookPlugin, ValidatingWebhookPlugin

PLUGINS: dict[str, PluginFactory] = {
    "AlwaysAdmit": lambda state, options: AlwaysAdmit(),
    "AlwaysDeny": lambda state, options: AlwaysDeny(),
    "NamespaceLifecycle": lambda state, options: NamespaceLifecycle(state),
    "LimitRanger": lambda state, options: LimitRanger(state),
    "ServiceAccount": lambda state, options: ServiceAccount(state),
    "NodeRestriction": lambda state, options: NodeRestriction(state),
    "PodSecurity": lambda state, options: PodSecurity(state),
    "DefaultTolerationSeconds": lambda state, options: DefaultTolerationSeconds(),
    "DefaultStorageClass": lambda state, options: DefaultStorageClass(state),
    "StorageObjectInUseProtection": lambda state, options: StorageObjectInUseProtection(),
    "PersistentVolumeClaimResize": lambda state, options: PersistentVolumeClaimResize(state),
    "Priority": lambda state, options: Priority(state),
    "ResourceQuota": lambda state, options: ResourceQuota(state),
    "MutatingAdmissionWebhook": lambda state, options: MutatingWebhookPlugin(state),
    "ValidatingAdmissionWebhook": lambda state, options: ValidatingWebhookPlugin(state),
}
