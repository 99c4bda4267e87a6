"""Each controller acts as its own ServiceAccount (kube's `--use-service-account-credentials`).

The controller manager's own identity, `system:kube-controller-manager`, may only read: list and watch
everything (for the shared informers), get and create ServiceAccounts and their tokens. Everything a
controller writes, it writes as `system:serviceaccount:kube-system:<account>`, which RBAC's bootstrap
policy binds to `system:controller:<account>` with exactly that controller's rights. So a ReplicaSet
controller may create pods, the pod GC may only delete them, and the audit log says which controller did what.

    builder = ServiceAccountClientBuilder(root_client)
    client = await builder.client("replicaset-controller")   # a RESTClient with that account's token
    ...
    await builder.close()

How a client is made: the ServiceAccount `kube-system/<account>` is created if missing, then a token is asked
for with a TokenRequest (`serviceaccounts/<account>/token`, one hour). `run()` renews each token when 80%
of its life has passed, in place (`RESTClient.set_bearer_token`), so controllers never see it change.

Usage rules: one client per account, shared by whoever asks again. A failed renewal is retried every few
seconds; the old token stays in use until it expires. Renewal times follow the injected `Clock`'s wall time
(tests move a FakeClock instead of waiting an hour).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from minikube_py.api.timestamps import parse_time
from minikube_py.client import errors, resources
from minikube_py.client.clock import Clock, RealClock
from minikube_py.client.kubeconfig import user_agent
from minikube_py.client.rest import RESTClient

NAMESPACE = "kube-system"
TOKEN_SECONDS = 3600
RENEW_AT = 0.8  # of a token's life
RETRY_SECONDS = 5.0

log = logging.getLogger(__name__)


@dataclasses.dataclass
class _Credential:
    client: RESTClient
    renew_at: float  # wall-clock epoch seconds at which to ask for the next token


class ServiceAccountClientBuilder:
    def __init__(self, root: RESTClient, *, namespace: str = NAMESPACE, token_seconds: int = TOKEN_SECONDS,
                 clock: Clock | None = None) -> None:
        self.root = root
        self.clock = clock or RealClock()
        self.namespace = namespace
        self.token_seconds = token_seconds
        self._credentials: dict[str, _Credential] = {}
        self._lock = asyncio.Lock()

    async def client(self, account: str) -> RESTClient:
        """The client acting as ServiceAccount `account`, made on first use."""
        async with self._lock:
            if account not in self._credentials:
                await self._ensure_account(account)
                token, renew_at = await self._token(account)
                config = dataclasses.replace(
                    self.root.config, cert_file=None, cert_data=None, key_file=None, key_data=None, token=token,
                    token_file=None, user_agent=f"{user_agent('kube-controller-manager')}/{account}")
                self._credentials[account] = _Credential(RESTClient(config), renew_at)
            return self._credentials[account].client

    async def run(self) -> None:
        """Renew tokens before they expire, until cancelled."""
        while True:
            await self.renew_due()
            await self.clock.sleep(1.0)

    async def renew_due(self) -> None:
        """Renew every token whose renewal time has come."""
        now = self._now()
        for account, credential in list(self._credentials.items()):
            if now >= credential.renew_at:
                await self._renew(account, credential)

    async def close(self) -> None:
        for credential in self._credentials.values():
            await credential.client.close()
        self._credentials.clear()

    async def _renew(self, account: str, credential: _Credential) -> None:
        try:
            await self._ensure_account(account)  # someone may have deleted it; its tokens died with it
            token, credential.renew_at = await self._token(account)
        except (errors.APIStatusError, OSError) as err:
            log.warning("cannot renew the token of %s/%s, retrying: %s", self.namespace, account, err)
            credential.renew_at = self._now() + RETRY_SECONDS
            return
        credential.client.set_bearer_token(token)

    async def _ensure_account(self, account: str) -> None:
        try:
            await self.root.get(resources.SERVICE_ACCOUNTS, account, self.namespace)
        except errors.NotFound:
            body = {"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": account, "namespace": self.namespace}}
            try:
                await self.root.create(resources.SERVICE_ACCOUNTS, body, self.namespace)
            except errors.AlreadyExists:
                pass

    async def _token(self, account: str) -> tuple[str, float]:
        """A new token for `account` and when to renew it."""
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": self.token_seconds}}
        answer = await self.root.create(resources.SERVICE_ACCOUNTS, body, self.namespace, name=account,
                                        subresource="token")
        status = answer.get("status") or {}
        issued = self._now()
        expires = parse_time(status["expirationTimestamp"]).timestamp()
        return status["token"], issued + (expires - issued) * RENEW_AT

    def _now(self) -> float:
        return self.clock.wall().timestamp()
