"""Benchmark 5: re-applying an unchanged 50-object manifest directory with the real kubectl ÷ `kubectl get`
of the same 50 objects, same run. Target ≤ 3.

What is measured: the wall time of one `kubectl` command, from exec to exit, against the tests' control
plane (a real etcd and an `mkpy apiserver` process, see common.control_plane), with a private HOME so that
kubectl's discovery and OpenAPI caches start empty and belong to this run:

* apply: `kubectl apply -f DIR/` of a directory holding 50 manifests, one object each (ConfigMaps,
  Secrets, ServiceAccounts, Services and Deployments, so two group-versions), all applied once before the
  clock runs, so every round is a re-apply of objects that have not changed;
* baseline, get: `kubectl get -f DIR/` of the same directory: one GET per object, the same 50 objects;
* for the analysis, not the target, "apply, no OpenAPI": the same re-apply with `--validate=false` and
  `KUBECTL_OPENAPIV3_PATCH=false`, which skips the two things kubectl does with the OpenAPI v3 documents
  for every object it applies: asking whether the server validates fields, and looking up the merge
  keys to compute the strategic merge patch (it then uses the types compiled into it).

The issue's reasoning for ≤ 3 is that an apply is a read plus an empty patch. (In fact kubectl sends no
PATCH at all when the computed patch is empty, so the requests of an unchanged re-apply are the GETs of
`kubectl get -f` plus the OpenAPI index.) Every command is warmed once, untimed, after the first apply
(discovery and OpenAPI documents are then in kubectl's disk cache), and rounds alternate the commands.
Figures are medians. Each run also records kubectl's own CPU time (user + system, from the child's rusage)
and the apiserver's and etcd's CPU time during the command, which says on which side of the connection the
time goes. At the end one more run of each with `-v=6` is parsed: how many requests of which method kubectl
sent, and their latencies as kubectl saw them.

    python -m bench.bench_apply [--rounds 5]
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import resource
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from bench.common import CpuMeter, control_plane, create_namespace, server_pids, verdict
from tests.harness import ControlPlane

NAMESPACE = "bench-apply"
TARGET = 3.0
MIX = {"configmap": 15, "secret": 10, "serviceaccount": 5, "service": 10, "deployment": 10}  # 50 objects
_REQUEST = re.compile(r"round_trippers\.go:\d+\] (GET|PUT|POST|PATCH|DELETE|HEAD) (\S+) (\d{3}) .* in (\d+) milliseconds")


# the manifests ------------------------------------------------------------------------------------------

def manifest(kind: str, i: int) -> str:
    """One object's YAML, as a user would keep it in a repository."""
    name = f"{kind}-{i:02d}"
    meta = f"metadata:\n  name: {name}\n  namespace: {NAMESPACE}\n  labels:\n    app: shop\n    part: p{i % 4}\n"
    if kind == "configmap":
        return (f"apiVersion: v1\nkind: ConfigMap\n{meta}data:\n  LOG_LEVEL: info\n  CACHE_SIZE: 256Mi\n"
                f"  UPSTREAM: http://backend-{i}.{NAMESPACE}.svc:8080\n  settings.ini: |\n"
                f"    [server]\n    port = 8080\n    workers = {i % 8 + 1}\n")
    if kind == "secret":
        password = base64.b64encode(f"s3cret-{i}".encode()).decode()
        return f"apiVersion: v1\nkind: Secret\n{meta}type: Opaque\ndata:\n  password: {password}\n  user: YXBw\n"
    if kind == "serviceaccount":
        return f"apiVersion: v1\nkind: ServiceAccount\n{meta}automountServiceAccountToken: false\n"
    if kind == "service":
        return (f"apiVersion: v1\nkind: Service\n{meta}spec:\n  selector:\n    app: shop\n    part: p{i % 4}\n"
                "  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n"
                "  - name: metrics\n    port: 9102\n")
    if kind == "deployment":
        return (f"apiVersion: apps/v1\nkind: Deployment\n{meta}spec:\n  replicas: {i % 3 + 1}\n"
                f"  selector:\n    matchLabels:\n      app: shop\n      part: p{i % 4}\n      unit: u{i}\n"
                f"  template:\n    metadata:\n      labels:\n        app: shop\n        part: p{i % 4}\n"
                f"        unit: u{i}\n    spec:\n      containers:\n      - name: web\n"
                f"        image: registry.example.com/shop/web:1.{i}.0\n        args: [--listen=:8080]\n"
                "        ports:\n        - containerPort: 8080\n          name: http\n"
                "        env:\n        - name: MODE\n          value: production\n"
                "        resources:\n          requests:\n            cpu: 100m\n            memory: 128Mi\n"
                "        readinessProbe:\n          httpGet:\n            path: /healthz\n            port: 8080\n"
                "      - name: sidecar\n        image: registry.example.com/shop/proxy:2.1\n")
    raise ValueError(kind)


def write_manifests(directory: Path) -> int:
    directory.mkdir()
    count = 0
    for kind, n in MIX.items():
        for i in range(n):
            (directory / f"{kind}-{i:02d}.yaml").write_text(manifest(kind, i))
            count += 1
    return count


# running kubectl ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    wall: float  # seconds, exec to exit
    kubectl_cpu: float  # seconds of kubectl's own CPU (user + system)
    server_cpu: dict[str, float]  # seconds of CPU each server process used meanwhile
    output: str


class Kubectl:
    """The real kubectl with the control plane's kubeconfig and a HOME (and so a cache) of its own."""

    def __init__(self, cp: ControlPlane) -> None:
        home = cp.workdir / "home"
        home.mkdir(exist_ok=True)
        self._env = {**os.environ, "HOME": str(home), "KUBECONFIG": str(cp.kubeconfig)}
        self._pids = server_pids(cp)

    def __call__(self, *args: str, env: dict[str, str] | None = None) -> Run:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        meter = CpuMeter(self._pids)
        began = time.perf_counter()
        done = subprocess.run(["kubectl", *args], env={**self._env, **(env or {})}, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL)
        wall = time.perf_counter() - began
        shares = meter.shares()  # share of a core over (about) the same interval
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return Run(wall, cpu, {name: share * wall for name, share in shares.items()}, done.stdout + done.stderr)


@dataclass(frozen=True)
class Side:
    label: str
    args: tuple[str, ...]
    env: dict[str, str]


def describe(run: Run) -> str:
    servers = ", ".join(f"{name} {seconds * 1e3:.0f} ms" for name, seconds in run.server_cpu.items())
    return f"{run.wall * 1e3:6,.0f} ms   CPU: kubectl {run.kubectl_cpu * 1e3:,.0f} ms, {servers}"


def requests_of(log: str) -> str:
    """What a `-v=6` log says about the requests: how many of each method, and their latencies."""
    methods: Counter[str] = Counter()
    latencies = []
    for method, url, _, ms in _REQUEST.findall(log):
        methods["GET /openapi" if method == "GET" and "/openapi/" in url else method] += 1
        latencies.append(int(ms))
    counts = ", ".join(f"{n} {method}" for method, n in sorted(methods.items()))
    return (f"{counts}; latencies median {median(latencies):.0f} ms, sum {sum(latencies):,} ms"
            if latencies else "no requests")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="timed runs of each command, alternating")
    args = parser.parse_args()
    with control_plane() as cp:
        create_namespace(cp, NAMESPACE)
        directory = cp.workdir / "manifests"
        count = write_manifests(directory)
        kubectl = Kubectl(cp)
        first = kubectl("apply", "-f", f"{directory}/")
        if first.output.count(" created") != count:
            raise RuntimeError(f"the first apply did not create all {count} objects:\n{first.output}")
        sides = [Side("apply", ("apply", "-f", f"{directory}/"), {}),
                 # the same apply without kubectl's OpenAPI work: no check whether the server validates
                 # fields, no patch metadata from OpenAPI v3 (kubectl falls back to its compiled-in types)
                 Side("apply, no OpenAPI", ("apply", "-f", f"{directory}/", "--validate=false"),
                      {"KUBECTL_OPENAPIV3_PATCH": "false"}),
                 Side("get", ("get", "-f", f"{directory}/"), {})]
        for side in sides:  # warm-up: discovery and OpenAPI are in kubectl's disk cache after this
            kubectl(*side.args, env=side.env)
        print(f"bench_apply: {count} objects ({', '.join(f'{n} {kind}s' for kind, n in MIX.items())}); "
              f"first apply {first.wall:.2f} s; {args.rounds} rounds of each command, alternating", flush=True)
        runs: dict[str, list[Run]] = {side.label: [] for side in sides}
        for n in range(args.rounds):
            for side in sides:
                run = kubectl(*side.args, env=side.env)
                if side.args[0] == "apply" and run.output.count(" unchanged") != count:
                    raise RuntimeError(f"a re-apply changed something:\n{run.output}")
                runs[side.label].append(run)
                print(f"  round {n + 1}  {side.label:<18} {describe(run)}", flush=True)
        verbose = {side.label: kubectl(*side.args, "-v=6", env=side.env) for side in sides}
    wall = {label: median(run.wall for run in done) for label, done in runs.items()}
    for label, done in runs.items():
        print(f"  median {label:<18} {wall[label] * 1e3:6,.0f} ms   CPU: kubectl "
              f"{median(run.kubectl_cpu for run in done) * 1e3:,.0f} ms, apiserver "
              f"{median(run.server_cpu['apiserver'] for run in done) * 1e3:,.0f} ms, etcd "
              f"{median(run.server_cpu['etcd'] for run in done) * 1e3:,.0f} ms")
    for label, run in verbose.items():
        print(f"  requests of one {label} (-v=6): {requests_of(run.output)}")
    print(f"  apply, no OpenAPI / get = {wall['apply, no OpenAPI'] / wall['get']:.2f} "
          f"(what is left of apply without kubectl's OpenAPI work)")
    verdict("apply: kubectl apply (unchanged) / kubectl get, 50 objects", wall["apply"] / wall["get"], TARGET,
            at_least=False)


if __name__ == "__main__":
    main()
