"""Each controller's own identity: the client builder against a recording root client and a fake clock (the
ServiceAccount, the TokenRequest, renewal in place), then against a real apiserver, which must see every
controller as `system:serviceaccount:kube-system:<account>` with only its own rights."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from minikube_py.api.timestamps import time_string
from minikube_py.client import errors, resources
from minikube_py.client.clock import FakeClock
from minikube_py.client.kubeconfig import ClientConfig, load_kubeconfig
from minikube_py.client.rest import RESTClient
from minikube_py.kcm.clientbuilder import ServiceAccountClientBuilder
from tests.harness import ControlPlane
from tests.kcm.fakes import RecordingClient

SELF_SUBJECT_REVIEWS = resources.builtin("authentication.k8s.io", "v1", "selfsubjectreviews")
SELF_SUBJECT_ACCESS_REVIEWS = resources.builtin("authorization.k8s.io", "v1", "selfsubjectaccessreviews")


class TokenIssuer(RecordingClient):
    """A root client (the controller manager's certificate identity) whose TokenRequests are answered with
    `token-1`, `token-2`, … valid for the seconds asked, on `clock`."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.config = ClientConfig(server="https://127.0.0.1:6443", cert_data=b"cert", key_data=b"key")
        self.clock = clock
        self.issued = 0

    async def create(
        self,
        resource: Any,
        body: dict[str, Any],
        namespace: str | None = None,
        *,
        name: str | None = None,
        subresource: str | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        answer = await super().create(
            resource, body, namespace, name=name, subresource=subresource, **options
        )
        if subresource == "token":
            self.issued += 1
            expires = self.clock.wall() + timedelta(seconds=body["spec"]["expirationSeconds"])
            answer["status"] = {"token": f"token-{self.issued}", "expirationTimestamp": time_string(expires)}
        return answer


def bearer_token(client: RESTClient) -> str:
    """The token the client sends now (what `set_bearer_token` changes)."""
    return client._auth.token  # type: ignore[union-attr]


def builder() -> tuple[ServiceAccountClientBuilder, TokenIssuer, FakeClock]:
    clock = FakeClock()
    root = TokenIssuer(clock)
    return ServiceAccountClientBuilder(root, clock=clock), root, clock  # type: ignore[arg-type]


async def test_a_controllers_first_client_creates_its_service_account_and_carries_a_one_hour_token() -> None:
    accounts, root, _ = builder()
    client = await accounts.client("replicaset-controller")
    assert [(a.verb, a.resource, a.namespace, a.name) for a in root.writes()] == [
        ("create", "serviceaccounts", "kube-system", "replicaset-controller"),
        ("create", "serviceaccounts/token", "kube-system", "replicaset-controller"),
    ]
    assert root.writes()[1].body["spec"] == {"expirationSeconds": 3600}
    config = client.config
    assert (config.token, config.cert_data, config.key_data, config.cert_file) == (
        "token-1",
        None,
        None,
        None,
    )
    assert config.server == "https://127.0.0.1:6443"
    assert config.user_agent.endswith("/replicaset-controller")
    await accounts.close()


async def test_an_existing_account_is_reused_and_asking_again_shares_the_client() -> None:
    accounts, root, _ = builder()
    root.put(resources.SERVICE_ACCOUNTS, {"metadata": {"name": "job-controller", "namespace": "kube-system"}})
    first = await accounts.client("job-controller")
    assert await accounts.client("job-controller") is first
    assert [(a.verb, a.resource) for a in root.writes()] == [("create", "serviceaccounts/token")]
    other = await accounts.client("pod-garbage-collector")
    assert other is not first and bearer_token(other) == "token-2"
    await accounts.close()


async def test_a_token_is_renewed_in_place_after_80_percent_of_its_life() -> None:
    accounts, root, clock = builder()
    client = await accounts.client("replicaset-controller")
    clock.advance(0.8 * 3600 - 1)
    await accounts.renew_due()
    assert root.issued == 1
    clock.advance(1)
    await accounts.renew_due()
    assert root.issued == 2 and bearer_token(client) == "token-2"
    assert await accounts.client("replicaset-controller") is client  # controllers never see the change
    await accounts.close()


async def test_a_failed_renewal_keeps_the_old_token_and_is_retried_a_few_seconds_later() -> None:
    accounts, root, clock = builder()
    client = await accounts.client("replicaset-controller")
    root.failures[("create", "serviceaccounts/token")] = errors.InternalError({"message": "etcd is away"})
    clock.advance(0.8 * 3600)
    await accounts.renew_due()
    assert bearer_token(client) == "token-1"
    del root.failures[("create", "serviceaccounts/token")]
    clock.advance(4)
    await accounts.renew_due()
    assert root.issued == 1  # not before the retry delay
    clock.advance(1)
    await accounts.renew_due()
    assert bearer_token(client) == "token-2"
    await accounts.close()


# against a real apiserver ----------------------------------------------------------------------------------


async def allowed(client: RESTClient, verb: str, resource: str, namespace: str) -> bool:
    review = await client.create(
        SELF_SUBJECT_ACCESS_REVIEWS,
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": verb, "resource": resource, "namespace": namespace}},
        },
    )
    return bool(review["status"]["allowed"])


async def test_the_apiserver_sees_each_controller_as_its_own_service_account_with_its_own_rights(
    control_plane: ControlPlane, namespace: str
) -> None:
    kubeconfig = control_plane.component_kubeconfig("controller-manager", "system:kube-controller-manager")
    async with RESTClient(load_kubeconfig(str(kubeconfig))) as root:
        accounts = ServiceAccountClientBuilder(root)
        try:
            for account in ("replicaset-controller", "pod-garbage-collector"):
                client = await accounts.client(account)
                review = await client.create(
                    SELF_SUBJECT_REVIEWS,
                    {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                )
                user = review["status"]["userInfo"]
                assert user["username"] == f"system:serviceaccount:kube-system:{account}"
                assert {"system:serviceaccounts", "system:serviceaccounts:kube-system"} <= set(user["groups"])
            replica_sets = await accounts.client("replicaset-controller")
            pod_gc = await accounts.client("pod-garbage-collector")
            assert await allowed(replica_sets, "create", "pods", namespace)
            assert await allowed(pod_gc, "delete", "pods", namespace)
            assert not await allowed(pod_gc, "create", "pods", namespace)  # least privilege
            assert not await allowed(root, "create", "pods", namespace)  # the manager itself only reads
        finally:
            await accounts.close()
