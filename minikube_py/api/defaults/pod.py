"""Defaults for pods and for the pod templates every workload embeds.

Kube splits these in two on purpose, and so do we: `pod_spec` is what every PodSpec gets, wherever it sits
(a Pod, a Deployment's template, a CronJob's job template), while `pod_only` holds what only a real Pod gets
(`enableServiceLinks`, requests copied from limits, host ports under `hostNetwork`), so that adding such a
field never changes the templates of existing workloads and so never triggers a rollout.

Everything here mutates the dict it is given and only fills in what is missing.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api.defaults.fields import child, dicts, set_default

DEFAULT_TERMINATION_GRACE_PERIOD = 30
DEFAULT_SCHEDULER_NAME = "default-scheduler"
DEFAULT_FILE_MODE = 0o644  # what secret, configMap, downwardAPI and projected volumes get (420 in JSON)
DEFAULT_TOKEN_EXPIRATION = 3600


def image_pull_policy(image: str) -> str:
    """`Always` for `:latest` (said or implied), `IfNotPresent` for any other tag or a digest."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.rpartition(":")[2] if ":" in last else ""
    if not tag and not digest:
        tag = "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def pod_spec(spec: dict[str, Any]) -> None:
    set_default(spec, "dnsPolicy", "ClusterFirst")
    set_default(spec, "restartPolicy", "Always")
    set_default(spec, "securityContext", {})
    set_default(spec, "terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD)
    set_default(spec, "schedulerName", DEFAULT_SCHEDULER_NAME)
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for container in dicts(spec, key):
            _container(container)
    for volume in dicts(spec, "volumes"):
        _volume(volume)


def pod_template(template: dict[str, Any]) -> None:
    pod_spec(child(template, "spec"))


def pod_only(pod: dict[str, Any]) -> None:
    spec = child(pod, "spec")
    for key in ("containers", "initContainers"):
        for container in dicts(spec, key):
            _requests_from_limits(container)
    set_default(spec, "enableServiceLinks", True)
    if spec.get("hostNetwork") is True:
        for key in ("containers", "initContainers"):
            for container in dicts(spec, key):
                for port in dicts(container, "ports"):
                    if not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort", 0)


def _requests_from_limits(container: dict[str, Any]) -> None:
    resources = child(container, "resources")
    limits = resources.get("limits")
    if not isinstance(limits, dict):
        return
    requests = child(resources, "requests")
    for name, quantity in limits.items():
        requests.setdefault(name, quantity)


def _container(container: dict[str, Any]) -> None:
    if not container.get("imagePullPolicy"):
        container["imagePullPolicy"] = image_pull_policy(str(container.get("image") or ""))
    set_default(container, "terminationMessagePath", "/dev/termination-log")
    set_default(container, "terminationMessagePolicy", "File")
    # A Go struct without omitempty: kube always shows `resources: {}`.
    set_default(container, "resources", {})
    for port in dicts(container, "ports"):
        set_default(port, "protocol", "TCP")
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(container.get(key), dict):
            _probe(container[key])
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if isinstance(lifecycle.get(hook), dict):
                _handler(lifecycle[hook])
    for env in dicts(container, "env"):
        _field_ref(env.get("valueFrom"))


def _probe(probe: dict[str, Any]) -> None:
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                       ("failureThreshold", 3)):
        if not probe.get(key):
            probe[key] = value
    _handler(probe)


def _handler(handler: dict[str, Any]) -> None:
    http_get = handler.get("httpGet")
    if isinstance(http_get, dict):
        set_default(http_get, "path", "/")
        set_default(http_get, "scheme", "HTTP")


def _field_ref(holder: Any) -> None:
    if isinstance(holder, dict) and isinstance(holder.get("fieldRef"), dict):
        set_default(holder["fieldRef"], "apiVersion", "v1")


# In the order kube checks them, which decides which extra source is the one reported.
_VOLUME_SOURCES = (
    "emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret", "nfs", "iscsi",
    "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs", "quobyte", "downwardAPI", "fc",
    "flexVolume", "configMap", "azureFile", "vsphereVolume", "photonPersistentDisk", "portworxVolume", "azureDisk",
    "storageos", "projected", "scaleIO", "csi", "ephemeral", "image",
)


_VOLUME_SOURCE_KEYS = frozenset(_VOLUME_SOURCES)


def volume_sources(volume: dict[str, Any]) -> list[str]:
    """The volume source keys set on a pod volume, in kube's order."""
    found = [key for key, value in volume.items() if key in _VOLUME_SOURCE_KEYS and value is not None]
    if len(found) > 1:
        found.sort(key=_VOLUME_SOURCES.index)
    return found


def _volume(volume: dict[str, Any]) -> None:
    if not volume_sources(volume):
        volume["emptyDir"] = {}
    for key in ("secret", "configMap", "downwardAPI", "projected"):
        if isinstance(volume.get(key), dict):
            set_default(volume[key], "defaultMode", DEFAULT_FILE_MODE)
    if isinstance(volume.get("hostPath"), dict):
        set_default(volume["hostPath"], "type", "")
    for item in dicts(child(volume, "downwardAPI", create=False), "items"):
        _field_ref(item)
    for source in dicts(child(volume, "projected", create=False), "sources"):
        _projection(source)
    template = child(child(volume, "ephemeral", create=False), "volumeClaimTemplate", create=False)
    if template:
        set_default(child(template, "spec"), "volumeMode", "Filesystem")


def _projection(source: dict[str, Any]) -> None:
    token = source.get("serviceAccountToken")
    if isinstance(token, dict):
        set_default(token, "expirationSeconds", DEFAULT_TOKEN_EXPIRATION)
    for item in dicts(child(source, "downwardAPI", create=False), "items"):
        _field_ref(item)
