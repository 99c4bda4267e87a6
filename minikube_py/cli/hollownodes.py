"""`mkpy hollow-nodes --config FILE`: run many simulated nodes (a fake runtime and a kubelet each) in one process.

`mkpy up --simulated-nodes M` starts one of these for all M simulated nodes (component `simulated-nodes`); the
file it writes lists each node's name, kubeconfig, runtime socket, pod CIDR and directory. See
`kubelet/hollow.py`.

Usage rules: a bad file is a one-line error and exit status 1; the process runs until SIGTERM or SIGINT.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click
import uvloop

from minikube_py.cli.signals import run_until_signalled


@click.command("hollow-nodes")
@click.option("--config", "config_file", required=True, type=click.Path(exists=True, dir_okay=False),
              help="JSON list of the nodes to simulate.")
@click.option("--v", "verbosity", type=click.IntRange(0, 10), default=2, help="Log verbosity (4+ for debug).")
def hollow_nodes(config_file: str, verbosity: int) -> None:
    """Run simulated nodes (fake runtime + kubelet each) in one process."""
    from minikube_py.kubelet import app, hollow

    logging.basicConfig(level=logging.DEBUG if verbosity >= 4 else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname).1s %(name)s] %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        nodes = hollow.load(Path(config_file))
        # uvloop: a hundred kubelets' requests, watches and timers are mostly event-loop work, which uvloop
        # does with a fraction of asyncio's own CPU
        uvloop.run(run_until_signalled(hollow.run_hollow_nodes(nodes)))
    except (hollow.HollowConfigError, app.KubeletSetupError, OSError) as error:
        raise click.ClickException(str(error)) from None
