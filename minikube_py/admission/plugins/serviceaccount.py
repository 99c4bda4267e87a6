"""ServiceAccount: every pod runs as a service account, with that account's API credentials mounted.

On a pod create (mutating phase), as kube's plugin does:

1. a pod without `serviceAccountName` gets `default`;
2. the service account must exist: else 403 `error looking up service account ns/sa: serviceaccount "sa"
   not found`. It is read from the watch cache, which may trail a write that has just been answered, so an
   account the cache does not hold is waited for a moment, as kube looks it up directly before refusing;
   the `default` account, created by the controller manager right after its namespace
   (kcm/controllers/serviceaccount.py), is waited for a few seconds, as kube retries that lookup;
3. unless the pod (first) or the account says `automountServiceAccountToken: false`, a projected volume
   `kube-api-access-<5 chars>` (a bound token the kubelet refreshes, the cluster CA from the
   `kube-root-ca.crt` ConfigMap, and the namespace) is added and mounted read-only at
   `/var/run/secrets/kubernetes.io/serviceaccount` in every init and regular container that does not
   already mount something there;
4. the account's `imagePullSecrets` are copied when the pod names none.

Mirror pods (static pods the kubelet reflects into the API) are left alone, but may not reference a
service account, secrets or token projections. In the validating phase the account must still exist and,
when it carries `kubernetes.io/enforce-mountable-secrets: "true"`, the pod may use only the secrets it
lists.
"""

from __future__ import annotations

from typing import Any

from ...api.names import random_suffix
from ...api.validation.pod import MIRROR_POD_ANNOTATION
from ..interface import CREATE, Attributes, ClusterState, forbidden
from .namespacelifecycle import wait_for

DEFAULT_SERVICE_ACCOUNT = "default"
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
VOLUME_PREFIX = "kube-api-access-"
ENFORCE_MOUNTABLE_SECRETS = "kubernetes.io/enforce-mountable-secrets"
TOKEN_EXPIRATION_SECONDS = 3607  # kube's "warn-only" bound token lifetime: 1h plus a few seconds
DEFAULT_ACCOUNT_WAIT = 5.0  # seconds the `default` account is waited for before the pod is refused
MISSING_ACCOUNT_WAIT = 1.0  # seconds any other account is waited for in the cache before the pod is refused


def token_volume(name: str) -> dict[str, Any]:
    """The projected volume kube adds (with `defaultMode` set explicitly, as kube does)."""
    return {"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}}


class ServiceAccount:
    name = "ServiceAccount"

    def __init__(self, state: ClusterState, default_wait: float = DEFAULT_ACCOUNT_WAIT,
                 missing_wait: float = MISSING_ACCOUNT_WAIT) -> None:
        self.state = state
        self.default_wait, self.missing_wait = default_wait, missing_wait

    def handles(self, operation: str) -> bool:
        return operation == CREATE

    @staticmethod
    def _pod(attributes: Attributes) -> dict[str, Any] | None:
        if attributes.group or attributes.resource != "pods" or attributes.subresource:
            return None
        return attributes.object if isinstance(attributes.object, dict) else None

    async def admit(self, attributes: Attributes) -> None:
        pod = self._pod(attributes)
        if pod is None or _is_mirror(pod):
            return
        spec = pod.setdefault("spec", {})
        if not spec.get("serviceAccountName"):
            # v1's deprecated `serviceAccount` still names the account when the new field is empty
            spec["serviceAccountName"] = spec.get("serviceAccount") or DEFAULT_SERVICE_ACCOUNT
        account = await self._account(attributes, spec["serviceAccountName"])
        if _automounts(spec, account):
            _mount_token(spec)
        if not spec.get("imagePullSecrets") and account.get("imagePullSecrets"):
            spec["imagePullSecrets"] = [{"name": ref.get("name", "")} for ref in account["imagePullSecrets"]]

    async def validate(self, attributes: Attributes) -> None:
        pod = self._pod(attributes)
        if pod is None:
            return
        spec = pod.get("spec") or {}
        if _is_mirror(pod):
            _check_mirror_pod(attributes, spec)
            return
        name = spec.get("serviceAccountName")
        if not name:
            raise forbidden(attributes, f"no service account specified for pod {attributes.namespace}/"
                                        f"{attributes.object_name}")
        account = await self._account(attributes, name)
        if (account.get("metadata", {}).get("annotations") or {}).get(ENFORCE_MOUNTABLE_SECRETS) == "true":
            _limit_secret_references(attributes, account, spec)

    async def _account(self, attributes: Attributes, name: str) -> dict[str, Any]:
        wait = self.default_wait if name == DEFAULT_SERVICE_ACCOUNT else self.missing_wait
        account = await wait_for(self.state, "", "serviceaccounts", attributes.namespace, name, wait)
        if account is None:
            raise forbidden(attributes, f"error looking up service account {attributes.namespace}/{name}: "
                                        f'serviceaccount "{name}" not found')
        return account


def _is_mirror(pod: dict[str, Any]) -> bool:
    return MIRROR_POD_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {})


def _automounts(spec: dict[str, Any], account: dict[str, Any]) -> bool:
    # the pod's own choice wins over the account's; both unset means mount
    for choice in (spec.get("automountServiceAccountToken"), account.get("automountServiceAccountToken")):
        if choice is not None:
            return bool(choice)
    return True


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for key in ("initContainers", "containers") for c in spec.get(key) or [] if isinstance(c, dict)]


def _mount_token(spec: dict[str, Any]) -> None:
    volumes = spec.get("volumes") or []
    existing = next((v.get("name") for v in volumes if isinstance(v, dict)
                     and str(v.get("name", "")).startswith(VOLUME_PREFIX)), None)
    name = existing or VOLUME_PREFIX + random_suffix()
    mounted = False
    for container in _containers(spec):
        mounts = container.get("volumeMounts") or []
        if any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH for m in mounts):
            continue  # a mount of its own at the standard path wins
        container["volumeMounts"] = [*mounts, {"name": name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}]
        mounted = True
    if mounted and existing is None:
        spec["volumes"] = [*volumes, token_volume(name)]


def _secret_names(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, secret name) for each secret the pod uses, in kube's wording of where."""
    found = [("volume with secret.secretName", str(v["secret"].get("secretName", "")))
             for v in spec.get("volumes") or [] if isinstance(v, dict) and isinstance(v.get("secret"), dict)]
    for key, label in (("initContainers", "init container"), ("containers", "container")):
        for container in spec.get(key) or []:
            for env in container.get("env") or []:
                ref = ((env.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name")
                if ref:
                    found.append((f"{label} {container.get('name')} with envVar {env.get('name')} referencing "
                                  "secret.secretName", str(ref)))
            for source in container.get("envFrom") or []:
                ref = (source.get("secretRef") or {}).get("name")
                if ref:
                    found.append((f"{label} {container.get('name')} with envFrom referencing secret.secretName",
                                  str(ref)))
    return found


def _limit_secret_references(attributes: Attributes, account: dict[str, Any], spec: dict[str, Any]) -> None:
    sa = account["metadata"]["name"]
    mountable = {ref.get("name") for ref in account.get("secrets") or []}
    for where, secret in _secret_names(spec):
        if secret not in mountable:
            raise forbidden(attributes, f'{where}="{secret}" is not allowed because service account {sa} '
                                        "does not reference that secret")
    pullable = {ref.get("name") for ref in account.get("imagePullSecrets") or []}
    for i, ref in enumerate(spec.get("imagePullSecrets") or []):
        if ref.get("name") not in pullable:
            raise forbidden(attributes, f'imagePullSecrets[{i}].name="{ref.get("name")}" is not allowed because '
                                        f"service account {sa} does not reference that imagePullSecret")


def _check_mirror_pod(attributes: Attributes, spec: dict[str, Any]) -> None:
    if spec.get("serviceAccountName"):
        raise forbidden(attributes, "a mirror pod may not reference service accounts")
    if _secret_names(spec) or spec.get("imagePullSecrets") or any(
            isinstance(s, dict) and "secret" in s
            for v in spec.get("volumes") or [] for s in (v.get("projected") or {}).get("sources") or []):
        raise forbidden(attributes, "a mirror pod may not reference secrets")
    for volume in spec.get("volumes") or []:
        if any("serviceAccountToken" in s for s in (volume.get("projected") or {}).get("sources") or []):
            raise forbidden(attributes, "a mirror pod may not use ServiceAccountToken volume projections")
