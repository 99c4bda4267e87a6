"""Printers for the smaller core/v1 kinds: Namespaces, ConfigMaps, Secrets, ServiceAccounts,
ResourceQuotas, PodTemplates and ReplicationControllers.

Counts (DATA, SECRETS, DESIRED, ...) are int cells, as kube sends them. A ResourceQuota row splits its
`used/hard` pairs into REQUEST and LIMIT by the `limits.` prefix of the resource name. Pods, Services and
Endpoints, Nodes, volumes and Events have modules of their own; LimitRanges and Bindings have no kube
printer and get the default Name/Created At table.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.printers.base import AGE, CONTAINERS, IMAGES, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import (
    age,
    container_cells,
    desired_replicas,
    format_labels,
    object_name,
    template_spec,
)


def _namespace_cells(namespace: dict[str, Any], now: datetime) -> list[Cell]:
    return [object_name(namespace), (namespace.get("status") or {}).get("phase", ""), age(namespace, now)]


def _config_map_cells(config_map: dict[str, Any], now: datetime) -> list[Cell]:
    keys = len(config_map.get("data") or {}) + len(config_map.get("binaryData") or {})
    return [object_name(config_map), keys, age(config_map, now)]


def _secret_cells(secret: dict[str, Any], now: datetime) -> list[Cell]:
    return [object_name(secret), secret.get("type", ""), len(secret.get("data") or {}), age(secret, now)]


def _service_account_cells(account: dict[str, Any], now: datetime) -> list[Cell]:
    return [object_name(account), len(account.get("secrets") or []), age(account, now)]


def _resource_quota_cells(quota: dict[str, Any], now: datetime) -> list[Cell]:
    status = quota.get("status") or {}
    hard, used = status.get("hard") or {}, status.get("used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        usage = f"{resource}: {used.get(resource, '0')}/{hard[resource]}"
        (limits if resource.startswith("limits.") else requests).append(usage)
    return [object_name(quota), ", ".join(requests), ", ".join(limits), age(quota, now)]


def _pod_template_cells(pod_template: dict[str, Any], now: datetime) -> list[Cell]:
    template = pod_template.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels")
    return [object_name(pod_template), *container_cells(template.get("spec")), format_labels(labels)]


def _replication_controller_cells(controller: dict[str, Any], now: datetime) -> list[Cell]:
    spec, status = controller.get("spec") or {}, controller.get("status") or {}
    return [
        object_name(controller), desired_replicas(spec), status.get("replicas", 0),
        status.get("readyReplicas", 0), age(controller, now), *container_cells(template_spec(controller)),
        format_labels(spec.get("selector")),
    ]


NAMESPACE = Printer((NAME, Column("Status", "The status of the namespace"), AGE), _namespace_cells)

CONFIG_MAP = Printer(
    (
        NAME,
        Column("Data", "Data contains the configuration data. Each key must consist of alphanumeric "
                       "characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the "
                       "BinaryData field. The keys stored in Data must not overlap with the keys in the "
                       "BinaryData field, this is enforced during validation process."),
        AGE,
    ),
    _config_map_cells,
)

SECRET = Printer(
    (
        NAME,
        Column("Type", "Used to facilitate programmatic handling of secret data. More info: "
                       "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
        Column("Data", "Data contains the secret data. Each key must consist of alphanumeric characters, "
                       "'-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, "
                       "representing the arbitrary (possibly non-string) data value here. Described in "
                       "https://tools.ietf.org/html/rfc4648#section-4"),
        AGE,
    ),
    _secret_cells,
)

SERVICE_ACCOUNT = Printer(
    (
        NAME,
        Column("Secrets", "Secrets is a list of the secrets in the same namespace that pods running using "
                          "this ServiceAccount are allowed to use. Pods are only limited to this list if "
                          "this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation "
                          "set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is "
                          "deprecated since v1.32. Prefer separate namespaces to isolate access to mounted "
                          "secrets. This field should not be used to find auto-generated service account "
                          "token secrets for use outside of pods. Instead, tokens can be requested directly "
                          "using the TokenRequest API, or service account token secrets can be manually "
                          "created. More info: https://kubernetes.io/docs/concepts/configuration/secret"),
        AGE,
    ),
    _service_account_cells,
)

RESOURCE_QUOTA = Printer(
    (
        NAME,
        Column("Request", "Request represents a minimum amount of cpu/memory that a container may consume."),
        Column("Limit", "Limits control the maximum amount of cpu/memory that a container may use "
                        "independent of contention on the node."),
        AGE,
    ),
    _resource_quota_cells,
)

POD_TEMPLATE = Printer(
    (
        NAME,
        Column("Containers", CONTAINERS.description),
        Column("Images", IMAGES.description),
        Column("Pod Labels", "The labels for the pod template."),
    ),
    _pod_template_cells,
)

REPLICATION_CONTROLLER = Printer(
    (
        NAME,
        Column("Desired", "Replicas is the number of desired replicas. This is a pointer to distinguish "
                          "between explicit zero and unspecified. Defaults to 1. More info: https://"
                          "kubernetes.io/docs/concepts/workloads/controllers/"
                          "replicationcontroller#what-is-a-replicationcontroller",
               type="integer"),
        Column("Current", "Replicas is the most recently observed number of replicas. More info: https://"
                          "kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller"
                          "#what-is-a-replicationcontroller", type="integer"),
        Column("Ready", "The number of ready replicas for this replication controller.", type="integer"),
        AGE,
        CONTAINERS,
        IMAGES,
        Column("Selector", "Selector is a label query over pods that should match the Replicas count. If "
                           "Selector is empty, it is defaulted to the labels present on the Pod template. "
                           "Label keys and values that must match in order to be controlled by this "
                           "replication controller, if empty defaulted to labels on Pod template. More info: "
                           "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/"
                           "#label-selectors", priority=1),
    ),
    _replication_controller_cells,
)

PRINTERS = {
    ("", "v1", "Namespace"): NAMESPACE,
    ("", "v1", "ConfigMap"): CONFIG_MAP,
    ("", "v1", "Secret"): SECRET,
    ("", "v1", "ServiceAccount"): SERVICE_ACCOUNT,
    ("", "v1", "ResourceQuota"): RESOURCE_QUOTA,
    ("", "v1", "PodTemplate"): POD_TEMPLATE,
    ("", "v1", "ReplicationController"): REPLICATION_CONTROLLER,
}
