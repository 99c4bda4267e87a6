"""Benchmark 6: what security costs. Pod creates by an RBAC-authorized user through every default admission
plugin ÷ the same creates by system:masters with admission off. Target ≥ 0.85.

What is measured: creates per second, closed loop, 16 concurrent clients (see common.run_load), each
creating the same ~1.5 KB JSON Pod as bench_create, over HTTPS on keep-alive connections, into one
namespace. Two apiserver processes share one etcd and differ only in what a request goes through:

* "secured": `--authorization-mode=Node,RBAC` with the default admission plugins plus NodeRestriction (as
  `mkpy up` runs it). The client is `bench-user`, a client certificate outside `system:masters`, allowed to
  create pods only by a RoleBinding in the namespace: each create is authorized by the Node authorizer
  (no opinion) and RBAC, then goes through NamespaceLifecycle, LimitRanger, ServiceAccount (which adds the
  projected token volume, so the stored pod is bigger), PodSecurity, Priority, DefaultTolerationSeconds,
  the webhook plugins (no configurations) and ResourceQuota (no quota).
* "masters, no admission": the same authorization flags, but every admission plugin disabled, and the admin
  certificate in `system:masters`, which is allowed before RBAC is asked.

Both sides serve only these creates: the controller manager beside them runs only the serviceaccount
controller (`common.BENCH_CONTROLLERS`). Controllers that watch pods would be connected to one side only
and make it stream every pod both sides create to them.

Sides alternate in rounds, so machine noise hits them alike, and take turns going first
(`common.compare`); figures are medians. Server CPU per create shows where the difference goes.

    python -m bench.bench_security [--seconds 3] [--rounds 4] [--concurrency 16] [--processes 1]
"""

from __future__ import annotations

from bench.common import (
    BENCH_CONTROLLERS,
    Side,
    TLSFiles,
    admin_tls,
    compare,
    create_namespace,
    parse_load,
    pod_creates,
    verdict,
)
from minikube_py.admission.chain import DEFAULT_ON
from minikube_py.admission.plugins import PLUGINS
from minikube_py.auth import pki
from tests.harness import ControlPlane

NAMESPACE = "bench-sec"
TARGET = 0.85
USER = "bench-user"


def grant_pod_creates(cp: ControlPlane) -> TLSFiles:
    """A Role allowing pod creates in NAMESPACE, bound to USER; USER's client certificate."""
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/" + NAMESPACE
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "pod-creator"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "pod-creator"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-creator"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}]}
    with cp.client() as admin:
        for url, obj in ((f"{rbac}/roles", role), (f"{rbac}/rolebindings", binding)):
            response = admin.post(url, json=obj)
            assert response.status_code == 201, response.text
    pki_dir = cp.workdir / "pki"
    user = pki.ensure_client_cert(pki_dir, pki.ensure_ca(pki_dir), USER, user=USER, groups=[])
    return TLSFiles(cp.ca_file, user.cert_path, user.key_path)


def main() -> None:
    load, rounds = parse_load(__doc__, seconds=3.0)
    disabled = ",".join(sorted(DEFAULT_ON & set(PLUGINS)))
    # the harness runs the apiserver as `mkpy up` does: Node,RBAC and NodeRestriction on top of the defaults
    secured = ControlPlane(controllers=BENCH_CONTROLLERS).start()
    open_ = ControlPlane(etcd=secured.etcd,
                         extra_args=("--enable-admission-plugins=", f"--disable-admission-plugins={disabled}"))
    try:
        open_.start_apiserver()
        create_namespace(secured, NAMESPACE)
        user_tls = grant_pod_creates(secured)
        print(f"bench_security: {load.concurrency} concurrent clients in {load.processes} process(es), "
              f"{rounds} rounds of {load.seconds:g} s; admission off on the baseline: {disabled}", flush=True)
        pids = {"secured": secured.process.pid, "open": open_.process.pid}  # type: ignore[union-attr]
        sides = [Side("masters, no admission", pod_creates, (open_.url, admin_tls(open_), NAMESPACE)),
                 Side("secured", pod_creates, (secured.url, user_tls, NAMESPACE))]
        rates = compare(load, rounds, sides, pids, "create")
    finally:
        open_.stop_apiserver()
        secured.stop()
    verdict("security: RBAC user + admission / masters without admission",
            rates["secured"] / rates["masters, no admission"], TARGET, at_least=True)


if __name__ == "__main__":
    main()
