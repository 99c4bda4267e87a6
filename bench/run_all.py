"""Run every benchmark, one after the other, each in its own process, and summarise their PASS/MISS lines.

Benchmarks are not tests: a MISS is a finding to read, not a failure, so this exits 0 whenever every
benchmark ran (and 1 only when one of them crashed). Each benchmark prints its figures against a baseline
measured in the same run; see docs/benchmarks.md for what each measures and the latest figures.

    .venv/bin/python -m bench.run_all [bench_create bench_get ...]
"""

from __future__ import annotations

import subprocess
import sys
import time

BENCHMARKS = ("bench_create", "bench_get", "bench_watch", "bench_up", "bench_apply", "bench_security",
              "scheduler_perf", "pod_startup", "simulated_nodes", "controller_reaction", "deployment_scale",
              "lb_throughput", "ccm_node_init")
VERDICTS = ("[PASS]", "[MISS]")


def run(name: str) -> tuple[list[str], bool]:
    """Run one benchmark, echoing its output; its verdict lines and whether it completed."""
    print(f"=== {name}", flush=True)
    began = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", f"bench.{name}"], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    verdicts = []
    for line in process.stdout:
        print(line, end="", flush=True)
        if line.startswith(VERDICTS):
            verdicts.append(line.rstrip())
    ok = process.wait() == 0
    print(f"=== {name}: {'done' if ok else f'CRASHED (exit {process.returncode})'} in "
          f"{time.monotonic() - began:.0f} s\n", flush=True)
    return verdicts, ok


def main() -> None:
    names = sys.argv[1:] or BENCHMARKS
    unknown = set(names) - set(BENCHMARKS)
    if unknown:
        sys.exit(f"unknown benchmark(s): {', '.join(sorted(unknown))}; choose from {', '.join(BENCHMARKS)}")
    summary, crashed = [], []
    for name in names:
        verdicts, ok = run(name)
        summary += verdicts
        if not ok:
            crashed.append(name)
    print("=== summary")
    for line in summary:
        print(line)
    for name in crashed:
        print(f"[CRASHED] {name}")
    sys.exit(1 if crashed else 0)


if __name__ == "__main__":
    main()
