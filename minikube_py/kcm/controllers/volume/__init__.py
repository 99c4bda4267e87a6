"""The volume controllers: kube's persistent-volume binder and the PVC and PV protection controllers.

binder.py         persistentvolume-binder-controller: binds claims to volumes, provisions and reclaims
  matching.py       which volume fits a claim
  binding.py        the writes that bind a volume and a claim, and their phases
  provisioning.py   dynamic provisioning (in-tree host-path, or waiting for an external provisioner)
  reclaim.py        Retain / Delete of a released volume
  hostpath.py       the in-tree host-path provisioner and deleter (--enable-hostpath-provisioner)
  localcache.py     the informer caches overlaid with the binder's own writes
pvcprotection.py  persistentvolumeclaim-protection-controller: a claim in use is not deleted
pvprotection.py   persistentvolume-protection-controller: a bound volume is not deleted
  protection.py     the finalizers both keep
podindex.py       pods by the claims they use, shared by the binder and PVC protection
"""

from minikube_py.kcm.controllers.volume.binder import PersistentVolumeController
from minikube_py.kcm.controllers.volume.pvcprotection import PVCProtectionController
from minikube_py.kcm.controllers.volume.pvprotection import PVProtectionController

__all__ = ["PersistentVolumeController", "PVCProtectionController", "PVProtectionController"]
