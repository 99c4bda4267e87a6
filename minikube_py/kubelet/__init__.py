"""The kubelet: the node agent that registers its Node, keeps its Lease fresh and runs the pods bound to it
through a container runtime over CRI (`cri/`: the proto, a client and a fake runtime).

Read docs/kubelet.md first; `app.py` wires the pieces together.
"""
