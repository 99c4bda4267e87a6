"""The container runtimes a node can run on, as seen from the host that runs the node.

* `containerd.py`: one real containerd per node: its directory layout, its config and CNI network, its
  command line, whether this machine can run it at all, the host's NAT rule for pod traffic, and the
  readiness probe. The kubelet then talks to it only over CRI (`minikube_py.kubelet.cri`).

Nodes that cannot have containerd (no root, not installed) use the fake CRI runtime of
`minikube_py.kubelet.cri.fake` instead; images for real nodes come from `minikube_py.kubelet.images`.
"""
