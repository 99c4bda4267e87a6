"""What a controller is built from: its client and event recorder, the shared informers, the settings.

The controller manager makes one `ControllerContext` per controller. The informer factory is shared by all
of them (one watch per resource for the whole process, under the manager's own identity); the client and
the recorder are the controller's own (its ServiceAccount, see clientbuilder.py), so whatever it writes,
events included, is authorized as that controller.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minikube_py.client.clock import Clock, RealClock
from minikube_py.client.events import CoreEventRecorder
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.rest import RESTClient


@dataclass(frozen=True)
class ControllerSettings:
    """The controller manager's flags that tune individual controllers (kube's KubeControllerManagerConfiguration)."""

    terminated_pod_gc_threshold: int = 12500  # terminated pods kept before the oldest are deleted; 0: no limit
    pod_gc_period: float = 20.0  # seconds between pod GC passes
    orphan_quarantine: float = 40.0  # seconds a pod's node must stay missing before the pod is deleted
    root_ca: str = ""  # PEM the root CA publisher puts in every namespace (--root-ca-file, else the kubeconfig's CA)
    resource_quota_sync_period: float = 300.0  # seconds between full recounts of every quota's usage
    max_endpoints_per_slice: int = 100  # endpoints in one EndpointSlice (--max-endpoints-per-slice)
    node_monitor_period: float = 5.0  # seconds between node health checks (--node-monitor-period)
    node_monitor_grace_period: float = 50.0  # silence after which a node is Unknown (--node-monitor-grace-period)
    node_startup_grace_period: float = 60.0  # the same for a node that never reported (--node-startup-grace-period)
    node_eviction_rate: float = 0.1  # nodes tainted NoExecute per second in a healthy zone (--node-eviction-rate)
    secondary_node_eviction_rate: float = 0.01  # the same in a partly unhealthy zone (--secondary-node-eviction-rate)
    large_cluster_size_threshold: int = 50  # zones up to this size stop tainting when partly unhealthy
    unhealthy_zone_threshold: float = 0.55  # share of not-ready nodes that makes a zone unhealthy
    allocate_node_cidrs: bool = False  # node IPAM gives nodes a spec.podCIDR (--allocate-node-cidrs)
    cluster_cidr: str = ""  # the pod range(s) it cuts node CIDRs from, comma-separated for dual-stack (--cluster-cidr)
    node_cidr_mask_size: int = 24  # prefix length of an IPv4 node CIDR; IPv6 ones are /64 (--node-cidr-mask-size)
    hpa_sync_period: float = 15.0  # seconds between two syncs of one HPA (--horizontal-pod-autoscaler-sync-period)
    hpa_downscale_stabilization: float = 300.0  # scale-down window (--horizontal-pod-autoscaler-downscale-stabilization)
    hpa_tolerance: float = 0.1  # usage ratio off 1.0 ignored (--horizontal-pod-autoscaler-tolerance)
    hpa_cpu_initialization_period: float = 300.0  # CPU samples of new pods distrusted (--horizontal-pod-autoscaler-cpu-initialization-period)
    hpa_initial_readiness_delay: float = 30.0  # readiness flaps of new pods ignored (--horizontal-pod-autoscaler-initial-readiness-delay)
    pv_claim_binder_sync_period: float = 15.0  # seconds between re-syncs of every claim and volume (--pvclaimbinder-sync-period)
    enable_hostpath_provisioner: bool = False  # the binder provisions kubernetes.io/host-path classes (--enable-hostpath-provisioner)
    hostpath_provisioner_dir: str = "/tmp/hostpath_pv"  # where those volumes' directories go (--hostpath-provisioner-dir)


@dataclass
class ControllerContext:
    client: RESTClient
    recorder: CoreEventRecorder
    informers: SharedInformerFactory
    settings: ControllerSettings = field(default_factory=ControllerSettings)
    clock: Clock = field(default_factory=RealClock)
