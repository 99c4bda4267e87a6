"""The `local` cloud: a cloud simulated on this machine, whose VMs are the cluster's nodes and whose load
balancers carry real traffic. config.py reads `--cloud-config`, state.py keeps the cloud's state on disk."""

from minikube_py.ccm.cloud.local.provider import new_provider

__all__ = ["new_provider"]
