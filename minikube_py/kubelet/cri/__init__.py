"""The Container Runtime Interface (CRI): how the kubelet talks to a container runtime.

* `api.proto`: our subset of Kubernetes' `runtime.v1` gRPC API, wire-compatible with containerd and crictl;
  `api_pb2.py`/`api_pb2.pyi`/`api_pb2_grpc.py` are generated from it by `scripts/gen-cri` (never edit them).
  Import the messages as `from minikube_py.kubelet.cri import api_pb2 as cri`.
* `client.py`: `RuntimeClient`, an async wrapper with one method per CRI call the kubelet makes.
* `errors.py`: the exceptions the client raises (`CRINotFound`, `CRIUnavailable`, ...).
* `logs.py`: the container log file format runtimes write (`<time> stdout F hello`) and a reader with
  `kubectl logs` options (tail, since, timestamps, follow across rotations).
* `fake/`: a runtime that serves the same API without running processes, for simulated nodes.

`mkpy crictl` (minikube_py/cli/crictl.py) is a small crictl over `RuntimeClient`.
"""
