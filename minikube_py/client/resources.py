"""The built-in resources the components talk to, as `api.kinds.Resource` values, and the URL of any resource.

A client names what it reads by the same `Resource` the apiserver serves (group, version, plural, scope), so
`client.rest.RESTClient.get(PODS, "web-0", namespace="default")` and the apiserver's routing agree by
construction. Custom resources: build a `Resource(group, version, kind, plural, namespaced=…)` directly.
"""

from __future__ import annotations

from urllib.parse import quote

from minikube_py.api.kinds import Resource, default_registry

_REGISTRY = default_registry()


def builtin(group: str, version: str, plural: str) -> Resource:
    resource = _REGISTRY.lookup(group, version, plural)
    if resource is None:
        raise KeyError(f"{plural}.{group}/{version} is not a built-in resource")
    return resource


NAMESPACES = builtin("", "v1", "namespaces")
PODS = builtin("", "v1", "pods")
NODES = builtin("", "v1", "nodes")
SERVICES = builtin("", "v1", "services")
ENDPOINTS = builtin("", "v1", "endpoints")
CONFIGMAPS = builtin("", "v1", "configmaps")
SECRETS = builtin("", "v1", "secrets")
SERVICE_ACCOUNTS = builtin("", "v1", "serviceaccounts")
CORE_EVENTS = builtin("", "v1", "events")
REPLICATION_CONTROLLERS = builtin("", "v1", "replicationcontrollers")
PERSISTENT_VOLUMES = builtin("", "v1", "persistentvolumes")
PERSISTENT_VOLUME_CLAIMS = builtin("", "v1", "persistentvolumeclaims")
RESOURCE_QUOTAS = builtin("", "v1", "resourcequotas")
LIMIT_RANGES = builtin("", "v1", "limitranges")
DEPLOYMENTS = builtin("apps", "v1", "deployments")
REPLICA_SETS = builtin("apps", "v1", "replicasets")
STATEFUL_SETS = builtin("apps", "v1", "statefulsets")
DAEMON_SETS = builtin("apps", "v1", "daemonsets")
CONTROLLER_REVISIONS = builtin("apps", "v1", "controllerrevisions")
JOBS = builtin("batch", "v1", "jobs")
CRON_JOBS = builtin("batch", "v1", "cronjobs")
HORIZONTAL_POD_AUTOSCALERS = builtin("autoscaling", "v2", "horizontalpodautoscalers")
LEASES = builtin("coordination.k8s.io", "v1", "leases")
EVENTS = builtin("events.k8s.io", "v1", "events")
PRIORITY_CLASSES = builtin("scheduling.k8s.io", "v1", "priorityclasses")
STORAGE_CLASSES = builtin("storage.k8s.io", "v1", "storageclasses")
POD_DISRUPTION_BUDGETS = builtin("policy", "v1", "poddisruptionbudgets")
ENDPOINT_SLICES = builtin("discovery.k8s.io", "v1", "endpointslices")


def path(resource: Resource, namespace: str | None = None, name: str | None = None,
         subresource: str | None = None) -> str:
    """`/api/v1/namespaces/default/pods/web-0/status` and the like; `namespace` None lists across namespaces."""
    base = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
    if resource.namespaced and namespace:
        base += f"/namespaces/{quote(namespace, safe='')}"
    base += f"/{resource.plural}"
    if name is not None:
        base += f"/{quote(name, safe='')}"
        if subresource:
            base += f"/{subresource}"
    return base
