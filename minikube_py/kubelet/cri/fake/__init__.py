"""A container runtime for simulated nodes: CRI served over gRPC, containers that "run" without processes.

* `runtime.py`: `FakeRuntime`, the state machine (sandboxes, containers, images, pod IPs) and the pod
  annotations that script containers (`fake.cri.mkpy.dev/run-seconds.<container>`, ...).
* `service.py`: the CRI RuntimeService and ImageService servicers that translate gRPC calls to it.
* `server.py`: `serve(socket_path, runtime)` starts one on a unix socket inside the running event loop;
  one process can host many (`mkpy fake-cri --listen PATH` runs one in the foreground).

The kubelet cannot tell it from containerd through `RuntimeClient`, except that exec, attach and
port-forward answer UNIMPLEMENTED.
"""

from minikube_py.kubelet.cri.fake.runtime import FakeRuntime
from minikube_py.kubelet.cri.fake.server import FakeRuntimeServer, serve

__all__ = ["FakeRuntime", "FakeRuntimeServer", "serve"]
