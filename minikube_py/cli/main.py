"""`mkpy`: the command line entry point (console script `mkpy = minikube_py.cli.main:main`).

The group knows its commands by name and `module:attribute` and imports a command's module only when that
command runs: `mkpy apiserver`, started by `mkpy up` for every cluster start, should not pay for rich,
YAML or the certificate code, and `mkpy up` should not pay for the apiserver. One module per command group:

    lifecycle.py   up, down, delete            status.py   status, list
    access.py      logs, kubeconfig, etcdctl   apiserver.py  apiserver (one module per component)
                                               kcm.py        kcm (the controller manager)
                                               ccm.py        ccm (the cloud controller manager)
                                               scheduler.py  scheduler, scheduler explain
    image.py       image load                      kubelet.py    kubelet
    cloud.py       cloud (the local cloud's console)
    crictl.py      crictl (the runtime's view)     fakecri.py    fake-cri (a simulated runtime)
                                                   hollownodes.py  hollow-nodes (many simulated nodes)

Errors are `click.ClickException`s: one line (plus log lines where they explain a failed start) and a
non-zero exit, never a traceback.
"""

from __future__ import annotations

import importlib

import click

COMMANDS = {
    "up": "minikube_py.cli.lifecycle:up",
    "down": "minikube_py.cli.lifecycle:down",
    "delete": "minikube_py.cli.lifecycle:delete",
    "status": "minikube_py.cli.status:status",
    "list": "minikube_py.cli.status:list_clusters_command",
    "logs": "minikube_py.cli.access:logs",
    "kubeconfig": "minikube_py.cli.access:kubeconfig",
    "etcdctl": "minikube_py.cli.access:etcdctl",
    "apiserver": "minikube_py.cli.apiserver:apiserver",
    "scheduler": "minikube_py.cli.scheduler:scheduler",
    "kcm": "minikube_py.cli.kcm:kcm",
    "ccm": "minikube_py.cli.ccm:ccm",
    "kubelet": "minikube_py.cli.kubelet:kubelet",
    "fake-cri": "minikube_py.cli.fakecri:fake_cri",
    "hollow-nodes": "minikube_py.cli.hollownodes:hollow_nodes",
    "crictl": "minikube_py.cli.crictl:crictl",
    "image": "minikube_py.cli.image:image",
    "cloud": "minikube_py.cli.cloud:cloud",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def __init__(self, *args: object, lazy_commands: dict[str, str], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._lazy_commands = lazy_commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self._lazy_commands)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = self._lazy_commands.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command


@click.group(cls=LazyGroup, lazy_commands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="minikube_py", prog_name="mkpy")
def cli() -> None:
    """mkpy: a miniature Kubernetes, for learning how Kubernetes works.

    Start a cluster with `mkpy up`, then use kubectl against it.
    """


def main() -> None:
    cli(prog_name="mkpy")


if __name__ == "__main__":
    main()
