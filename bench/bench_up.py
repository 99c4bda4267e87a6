"""Benchmark 4: `mkpy up` to a ready apiserver (target ≤ 3 s; kind needs 33 s, k3d 20 s), and the idle
memory of what it starts (etcd + apiserver RSS, target ≤ 150 MB).

What is measured, in a fresh `MKPY_HOME` (and a private HOME and KUBECONFIG, so the user's kubeconfig is
never touched), as a user runs it: the wall time of the `mkpy` console script from exec to exit, which
`mkpy up` only reaches once the apiserver answers /readyz.

* the first `mkpy up`: creates the cluster directory, the CA and certificates, etcd's data directory;
* `mkpy up` after `mkpy down`, a few times: the usual start, everything already on disk;
* idle RSS: `VmRSS` of the two processes named by the cluster's pidfiles, a few seconds after the last up.

Baseline (the floor, measured in the same run): the same etcd command line `mkpy up` uses, started and
polled until healthy, then bench/baseline_server.py (a Python process that imports the apiserver's code
and serves one static route with the apiserver's TLS settings, on the cluster's own certificates) started
and polled until it answers; and the idle RSS of those two. What `mkpy up` takes beyond that floor is the
CLI itself, the PKI and kubeconfig checks, the apiserver's connection to etcd and its bootstrap; what the
apiserver holds beyond the bare server is its runtime state. Targets are absolute; the ratios to the floor
are printed to show where the time and memory go.

    python -m bench.bench_up [--restarts 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import median

from bench import baseline_server
from bench.common import rss_mb, verdict
from minikube_py.store.etcd_server import etcd_argv, free_port, is_healthy

CLUSTER = "bench"
UP_TARGET = 3.0  # seconds
RSS_TARGET = 150.0  # MB
IDLE_SETTLE = 3.0  # seconds between a start and reading memory
POLL = 0.02  # seconds, as `mkpy up` polls


class Home:
    """A private MKPY_HOME, HOME and KUBECONFIG, and the `mkpy` console script run against them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cluster_dir = root / "mkpy" / CLUSTER
        self._env = {**os.environ, "HOME": str(root), "MKPY_HOME": str(root / "mkpy"),
                     "KUBECONFIG": str(root / "kube" / "config")}
        self._mkpy = str(Path(sys.executable).parent / "mkpy")

    def mkpy(self, *args: str) -> float:
        """Run `mkpy ARGS --name bench`; its wall time in seconds."""
        began = time.perf_counter()
        done = subprocess.run([self._mkpy, *args, "--name", CLUSTER], env=self._env, capture_output=True,
                              stdin=subprocess.DEVNULL)
        elapsed = time.perf_counter() - began
        if done.returncode != 0:
            raise RuntimeError(f"mkpy {' '.join(args)} failed ({done.returncode}):\n"
                               f"{done.stdout.decode()}{done.stderr.decode()}")
        return elapsed

    def pid(self, component: str) -> int:
        return int((self.cluster_dir / "run" / f"{component}.pid").read_text())

    def pki(self, name: str) -> Path:
        return self.cluster_dir / "pki" / name


@contextmanager
def private_home() -> Iterator[Home]:
    root = Path(tempfile.mkdtemp(prefix="mkpy-bench-up-"))
    home = Home(root)
    try:
        yield home
    finally:
        if (home.cluster_dir / "cluster.json").exists():
            home.mkpy("delete")
        shutil.rmtree(root, ignore_errors=True)


def idle_rss(pids: dict[str, int]) -> dict[str, float]:
    time.sleep(IDLE_SETTLE)
    return {name: rss_mb(pid) for name, pid in pids.items()}


def floor(home: Home) -> tuple[float, dict[str, float]]:
    """Start a bare etcd and the bare TLS server one after the other: the time until both answer, and
    their idle RSS."""
    client_port, peer_port = free_port(), free_port()
    argv = etcd_argv("floor", home.root / "floor-etcd", client_port, peer_port, fast=True, unsafe_no_fsync=False)
    body = home.root / "body.json"
    body.write_bytes(b'{"kind":"Status"}')
    began = time.perf_counter()
    etcd = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not is_healthy(f"http://127.0.0.1:{client_port}"):
            time.sleep(POLL)
        tls = (home.pki("apiserver.crt"), home.pki("apiserver.key"), home.pki("ca.crt"))
        server = baseline_server.start(free_port(), tls, home.root / "floor-server.log", "--body", str(body))
        elapsed = time.perf_counter() - began
        try:
            rss = idle_rss({"etcd": etcd.pid, "bare server": server.pid})
        finally:
            baseline_server.stop(server)
    finally:
        etcd.terminate()
        etcd.wait(10)
    return elapsed, rss


def show_rss(label: str, rss: dict[str, float]) -> str:
    parts = " + ".join(f"{name} {mb:.1f}" for name, mb in rss.items())
    return f"  {label:<28} {parts} = {sum(rss.values()):.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--restarts", type=int, default=3, help="`mkpy down` + `mkpy up` cycles to time")
    args = parser.parse_args()
    with private_home() as home:
        # `--nodes 0`: this measures the control plane; a node (containerd and a kubelet) adds about a
        # second and is measured by bench/pod_startup.py.
        first = home.mkpy("up", "--no-switch-context", "--nodes", "0")
        downs, ups = [], []
        for _ in range(args.restarts):
            downs.append(home.mkpy("down"))
            ups.append(home.mkpy("up", "--no-switch-context"))
        rss = idle_rss({"etcd": home.pid("etcd"), "apiserver": home.pid("apiserver")})
        home.mkpy("down")
        floor_time, floor_rss = floor(home)
    up = median(ups)
    print("bench_up: the wall time of the `mkpy` command, in a fresh MKPY_HOME")
    print(f"  first up (creates the PKI)   {first:.2f} s")
    print(f"  up after down                {' / '.join(f'{t:.2f}' for t in ups)} s (median {up:.2f} s); "
          f"down: median {median(downs):.2f} s")
    print(f"  floor (bare etcd, then bare TLS server, to ready): {floor_time:.2f} s; "
          f"up / floor = {up / floor_time:.1f}")
    print(show_rss("idle RSS after up:", rss))
    print(show_rss("idle RSS of the floor:", floor_rss) + f"; ratio {sum(rss.values()) / sum(floor_rss.values()):.2f}")
    verdict("up: first mkpy up (with PKI)", first, UP_TARGET, at_least=False, unit=" s")
    verdict("up: mkpy up after down (median)", up, UP_TARGET, at_least=False, unit=" s")
    verdict("up: idle RSS etcd + apiserver", sum(rss.values()), RSS_TARGET, at_least=False, unit=" MB")


if __name__ == "__main__":
    main()
