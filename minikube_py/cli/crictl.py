"""`mkpy crictl`: a small crictl, to look at a node the way its container runtime sees it.

Kubernetes' `crictl` talks CRI to a runtime's socket; so does this, through the kubelet's own
`RuntimeClient`, so a lab can follow a pod from the API down to sandboxes and containers:

    mkpy crictl --node mkpy-m02 pods                      # the sandboxes of a node of cluster "mkpy"
    mkpy crictl --runtime-endpoint /run/x.sock ps -a      # any CRI socket (or $CONTAINER_RUNTIME_ENDPOINT)
    mkpy crictl --node mkpy-m02 logs -f 3f2a              # IDs may be shortened to a unique prefix
    mkpy crictl --node mkpy-m02 exec 3f2a cat /etc/hostname

Output follows crictl's: the same columns, IDs cut to 13 characters (`-q` prints whole ones), `inspect*`
print the runtime's status (with its verbose info) as JSON. `exec` runs the command through ExecSync (no
terminal, no stdin) and exits with its exit code. Errors are one line and a non-zero exit.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import click
from google.protobuf import json_format

from minikube_py.cli.cluster import name_option
from minikube_py.kubelet.cri import api_pb2 as cri
from minikube_py.kubelet.cri.client import RuntimeClient
from minikube_py.kubelet.cri.errors import CRIError
from minikube_py.kubelet.cri.logs import format_timestamp, read_log

T = TypeVar("T")

TRUNCATED_ID_LENGTH = 13  # crictl's short IDs
FOLLOW_CHECK_INTERVAL = 1.0  # seconds between "is the container still running?" checks of `logs -f`
POD_STATES = {"ready": cri.SANDBOX_READY, "notready": cri.SANDBOX_NOTREADY}


@dataclass
class Target:
    """Which runtime the commands talk to: an explicit socket, or a node of a cluster."""

    endpoint: str | None
    node: str | None
    cluster: str
    timeout: float

    def resolve_endpoint(self) -> str:
        if self.endpoint:
            return self.endpoint
        if self.node is None:
            raise click.ClickException(
                "say which runtime: --node NODE (of cluster --name) or --runtime-endpoint SOCKET "
                "(or set CONTAINER_RUNTIME_ENDPOINT)"
            )
        from minikube_py.cli.nodes import runtime_endpoint

        return runtime_endpoint(self.cluster, self.node)

    def client(self) -> RuntimeClient:
        endpoint = self.resolve_endpoint()
        try:
            return RuntimeClient(endpoint, timeout=self.timeout)
        except ValueError as err:
            raise click.ClickException(str(err)) from None


def run(ctx: click.Context, work: Callable[[RuntimeClient], Awaitable[T]]) -> T:
    """Runs `work` with a client for the selected runtime; CRI errors become one-line click errors."""
    target = ctx.find_object(Target)
    assert target is not None, "crictl subcommands run under the crictl group"

    async def main() -> T:
        async with target.client() as client:
            return await work(client)

    try:
        return asyncio.run(main())
    except CRIError as err:
        raise click.ClickException(str(err)) from None


@click.group()
@click.option("--runtime-endpoint", "-r", envvar="CONTAINER_RUNTIME_ENDPOINT", metavar="SOCKET",
              help="CRI socket: a path or unix:///path (env CONTAINER_RUNTIME_ENDPOINT).")
@click.option("--node", metavar="NODE", help="Talk to this node's runtime (of the cluster given by --name).")
@name_option
@click.option("--timeout", "-t", type=float, default=10.0, show_default=True, help="Seconds per CRI call.")
@click.pass_context
def crictl(
    ctx: click.Context, runtime_endpoint: str | None, node: str | None, name: str, timeout: float
) -> None:
    """Inspect a node's container runtime over CRI, like Kubernetes' crictl."""
    ctx.obj = Target(runtime_endpoint, node, name, timeout)


# --- formatting ---------------------------------------------------------------------------------------------


def short_id(full_id: str) -> str:
    return full_id.removeprefix("sha256:")[:TRUNCATED_ID_LENGTH]


def ago(nanoseconds: int) -> str:
    """How long ago a Unix-nanoseconds time was, in Docker's words ("2 minutes ago")."""
    seconds = max(0.0, time.time() - nanoseconds / 1e9)
    minutes, hours = int(seconds / 60), int(seconds / 3600 + 0.5)
    if seconds < 1:
        text = "Less than a second"
    elif seconds < 60:
        text = "1 second" if int(seconds) == 1 else f"{int(seconds)} seconds"
    elif minutes < 60:
        text = "About a minute" if minutes == 1 else f"{minutes} minutes"
    elif hours < 48:
        text = "About an hour" if hours == 1 else f"{hours} hours"
    elif hours < 24 * 14:
        text = f"{hours // 24} days"
    elif hours < 24 * 60:
        text = f"{hours // (24 * 7)} weeks"
    elif hours < 24 * 730:
        text = f"{hours // (24 * 30)} months"
    else:
        text = f"{hours // (24 * 365)} years"
    return f"{text} ago"


def human_size(size: float) -> str:
    """Bytes with decimal units and three significant digits ("2.22MB"), as crictl prints image sizes."""
    units = ["B", "kB", "MB", "GB", "TB", "PB"]
    unit = 0
    while size >= 1000 and unit < len(units) - 1:
        size /= 1000
        unit += 1
    return f"{size:.3g}{units[unit]}"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns padded like crictl's tabwriter: at least 20 wide, 3 spaces after the longest cell."""
    lines = [list(header), *([str(cell) for cell in row] for row in rows)]
    widths = [max(20, max(len(line[i]) for line in lines) + 3) for i in range(len(header) - 1)]
    padded = ("".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False)) for line in lines)
    return "\n".join(start + line[-1] for start, line in zip(padded, lines, strict=True))


def status_json(status: Any, info: Any) -> str:
    """A status message plus its verbose `info` as crictl's inspect commands print them."""
    fields = json_format.MessageToDict(status, always_print_fields_with_no_presence=True,
                                      unquote_int64_if_possible=True)
    for key in ("createdAt", "startedAt", "finishedAt"):
        if key in fields:
            fields[key] = format_timestamp(datetime.fromtimestamp(int(fields[key]) / 1e9, UTC))
    return json.dumps({"status": fields, "info": {key: _json_or_text(value) for key, value in info.items()}},
                      indent=2)


def _json_or_text(value: str) -> Any:
    """Runtimes put JSON documents in `info` values; show them as JSON, anything else as a string."""
    try:
        return json.loads(value)
    except ValueError:
        return value


# --- IDs ----------------------------------------------------------------------------------------------------


def unique_match(kind: str, prefix: str, ids: Sequence[str]) -> str:
    """The one ID in `ids` that is `prefix` or starts with it; a clear error when none or several do."""
    if prefix in ids:
        return prefix
    matches = [full_id for full_id in ids if full_id.startswith(prefix)]
    if not matches:
        raise click.ClickException(f"no {kind} with ID {prefix!r}")
    if len(matches) > 1:
        shown = ", ".join(short_id(full_id) for full_id in matches)
        raise click.ClickException(f"{kind} ID prefix {prefix!r} is ambiguous: it matches {shown}")
    return matches[0]


async def container_id(client: RuntimeClient, prefix: str) -> str:
    return unique_match("container", prefix, [c.id for c in await client.list_containers()])


async def pod_id(client: RuntimeClient, prefix: str) -> str:
    return unique_match("pod sandbox", prefix, [p.id for p in await client.list_pod_sandbox()])


def regex(ctx: click.Context, param: click.Parameter, value: str | None) -> re.Pattern[str]:
    """A filter option's regular expression (crictl matches anywhere in the name); unset matches all."""
    try:
        return re.compile(value or "")
    except re.error as err:
        raise click.BadParameter(f"invalid regular expression {value!r}: {err}") from None


# --- pods, containers, images -------------------------------------------------------------------------------


@crictl.command()
@click.option("--name", "pod_name", metavar="REGEX", callback=regex, help="Only pods whose name matches.")
@click.option("--namespace", metavar="REGEX", callback=regex, help="Only pods whose namespace matches.")
@click.option("--state", type=click.Choice(sorted(POD_STATES), case_sensitive=False),
              help="Only pods in this state.")
@click.option("-q", "--quiet", is_flag=True, help="Print only pod IDs.")
@click.pass_context
def pods(
    ctx: click.Context, pod_name: re.Pattern[str], namespace: re.Pattern[str], state: str | None, quiet: bool
) -> None:
    """List pod sandboxes, newest first."""
    state_filter = cri.PodSandboxStateValue(state=POD_STATES[state.lower()]) if state else None
    items = run(ctx, lambda client: client.list_pod_sandbox(cri.PodSandboxFilter(state=state_filter)))
    items = [
        p for p in sorted(items, key=lambda p: p.created_at, reverse=True)
        if pod_name.search(p.metadata.name) and namespace.search(p.metadata.namespace)
    ]
    if quiet:
        click.echo("".join(f"{p.id}\n" for p in items), nl=False)
        return
    rows = [
        (short_id(p.id), ago(p.created_at), "Ready" if p.state == cri.SANDBOX_READY else "NotReady",
         p.metadata.name, p.metadata.namespace, p.metadata.attempt, p.runtime_handler or "(default)")
        for p in items
    ]
    click.echo(table(("POD ID", "CREATED", "STATE", "NAME", "NAMESPACE", "ATTEMPT", "RUNTIME"), rows))


CONTAINER_STATES = {
    cri.CONTAINER_CREATED: "Created",
    cri.CONTAINER_RUNNING: "Running",
    cri.CONTAINER_EXITED: "Exited",
    cri.CONTAINER_UNKNOWN: "Unknown",
}


@crictl.command()
@click.option("-a", "--all", "show_all", is_flag=True, help="Also containers that are not running.")
@click.option("-p", "--pod", metavar="POD-ID", help="Only containers of this pod sandbox (ID or prefix).")
@click.option("-q", "--quiet", is_flag=True, help="Print only container IDs.")
@click.pass_context
def ps(ctx: click.Context, show_all: bool, pod: str | None, quiet: bool) -> None:
    """List containers (running ones unless -a), newest first."""

    async def work(client: RuntimeClient) -> list[cri.Container]:
        running = None if show_all else cri.ContainerStateValue(state=cri.CONTAINER_RUNNING)
        sandbox = await pod_id(client, pod) if pod else ""
        return await client.list_containers(cri.ContainerFilter(state=running, pod_sandbox_id=sandbox))

    containers = sorted(run(ctx, work), key=lambda c: c.created_at, reverse=True)
    if quiet:
        click.echo("".join(f"{c.id}\n" for c in containers), nl=False)
        return
    rows = [
        (short_id(c.id), short_id(c.image.image) if c.image.image.startswith("sha256:") else c.image.image,
         ago(c.created_at), CONTAINER_STATES.get(c.state, "Unknown"), c.metadata.name, c.metadata.attempt,
         short_id(c.pod_sandbox_id), c.labels.get("io.kubernetes.pod.name", "unknown"))
        for c in containers
    ]
    click.echo(table(("CONTAINER", "IMAGE", "CREATED", "STATE", "NAME", "ATTEMPT", "POD ID", "POD"), rows))


@crictl.command()
@click.option("-q", "--quiet", is_flag=True, help="Print only image IDs.")
@click.pass_context
def images(ctx: click.Context, quiet: bool) -> None:
    """List the images the runtime has."""
    found = run(ctx, lambda client: client.list_images())
    if quiet:
        click.echo("".join(f"{image.id}\n" for image in found), nl=False)
        return
    rows = []
    for image in sorted(found, key=lambda image: list(image.repo_tags)):
        for tag in image.repo_tags or ["<none>:<none>"]:
            repository, _, version = tag.rpartition(":")
            rows.append((repository, version, short_id(image.id), human_size(image.size)))
    click.echo(table(("IMAGE", "TAG", "IMAGE ID", "SIZE"), rows))


# --- inspecting ---------------------------------------------------------------------------------------------


@crictl.command()
@click.argument("container")
@click.pass_context
def inspect(ctx: click.Context, container: str) -> None:
    """Print a container's status and the runtime's verbose info as JSON."""

    async def work(client: RuntimeClient) -> cri.ContainerStatusResponse:
        return await client.container_status(await container_id(client, container), verbose=True)

    response = run(ctx, work)
    click.echo(status_json(response.status, response.info))


@crictl.command()
@click.argument("pod")
@click.pass_context
def inspectp(ctx: click.Context, pod: str) -> None:
    """Print a pod sandbox's status and the runtime's verbose info as JSON."""

    async def work(client: RuntimeClient) -> cri.PodSandboxStatusResponse:
        return await client.pod_sandbox_status(await pod_id(client, pod), verbose=True)

    response = run(ctx, work)
    click.echo(status_json(response.status, response.info))


@crictl.command()
@click.argument("image")
@click.pass_context
def inspecti(ctx: click.Context, image: str) -> None:
    """Print an image's status and the runtime's verbose info (its config) as JSON."""
    response = run(ctx, lambda client: client.inspect_image(image, verbose=True))
    if not response.HasField("image"):
        raise click.ClickException(f"no such image {image!r}")
    click.echo(status_json(response.image, response.info))


@crictl.command()
@click.pass_context
def version(ctx: click.Context) -> None:
    """Print the runtime's name and version."""
    response = run(ctx, lambda client: client.version())
    click.echo(f"Version:  {response.version}\n"
               f"RuntimeName:  {response.runtime_name}\n"
               f"RuntimeVersion:  {response.runtime_version}\n"
               f"RuntimeApiVersion:  {response.runtime_api_version}")


@crictl.command()
@click.pass_context
def info(ctx: click.Context) -> None:
    """Print the runtime's conditions and its verbose info (its configuration) as JSON."""
    response = run(ctx, lambda client: client.status(verbose=True))
    document = {"status": json_format.MessageToDict(response.status)}
    document.update({key: _json_or_text(value) for key, value in response.info.items()})
    click.echo(json.dumps(document, indent=2))


# --- logs and exec ------------------------------------------------------------------------------------------


@crictl.command()
@click.argument("container")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until the container stops.")
@click.option("--tail", type=click.IntRange(min=0), help="Only the last N lines.")
@click.option("--timestamps", is_flag=True, help="Prefix each line with its time.")
@click.pass_context
def logs(ctx: click.Context, container: str, follow: bool, tail: int | None, timestamps: bool) -> None:
    """Print a container's log (read from its log file, like the kubelet does)."""
    out = sys.stdout.buffer

    async def work(client: RuntimeClient) -> None:
        full_id = await container_id(client, container)
        status = (await client.container_status(full_id)).status
        exited = asyncio.Event()
        watcher = asyncio.create_task(_watch_exit(client, full_id, exited)) if follow else None
        try:
            lines = read_log(status.log_path, tail_lines=tail, timestamps=timestamps, follow=follow,
                             stop_following=exited.is_set)
            async for chunk in lines:
                out.write(chunk)
                if follow:
                    out.flush()
        except FileNotFoundError:
            message = f"container {short_id(full_id)} has no log file {status.log_path!r}"
            raise click.ClickException(message) from None
        finally:
            if watcher is not None:
                watcher.cancel()

    try:
        run(ctx, work)
    except KeyboardInterrupt:
        pass
    out.flush()


async def _watch_exit(client: RuntimeClient, full_id: str, exited: asyncio.Event) -> None:
    """Sets `exited` once the container is no longer running (or no longer exists)."""
    while True:
        try:
            state = (await client.container_status(full_id)).status.state
        except CRIError:
            break
        if state != cri.CONTAINER_RUNNING:
            break
        await asyncio.sleep(FOLLOW_CHECK_INTERVAL)
    exited.set()


@crictl.command("exec", context_settings={"allow_interspersed_args": False})
@click.option("--timeout", type=click.IntRange(min=0), default=0,
              help="Seconds the command may run (0: no limit).")
@click.argument("container")
@click.argument("command", nargs=-1, required=True)
@click.pass_context
def exec_command(ctx: click.Context, timeout: int, container: str, command: tuple[str, ...]) -> None:
    """Run a command in a container (no terminal, no stdin) and exit with its exit code."""

    async def work(client: RuntimeClient) -> cri.ExecSyncResponse:
        return await client.exec_sync(await container_id(client, container), list(command), timeout)

    response = run(ctx, work)
    sys.stdout.buffer.write(response.stdout)
    sys.stdout.flush()
    sys.stderr.buffer.write(response.stderr)
    ctx.exit(response.exit_code)


# --- stopping and removing ----------------------------------------------------------------------------------


@crictl.command()
@click.argument("containers", nargs=-1, required=True)
@click.option("--timeout", type=click.IntRange(min=0), default=10, show_default=True,
              help="Seconds between the stop signal and SIGKILL.")
@click.pass_context
def stop(ctx: click.Context, containers: tuple[str, ...], timeout: int) -> None:
    """Stop running containers."""
    _each(ctx, containers, container_id, lambda client, cid: client.stop_container(cid, timeout), "{}")


@crictl.command()
@click.argument("containers", nargs=-1, required=True)
@click.option("-f", "--force", is_flag=True, help="Stop running containers first.")
@click.pass_context
def rm(ctx: click.Context, containers: tuple[str, ...], force: bool) -> None:
    """Remove containers."""

    async def remove(client: RuntimeClient, full_id: str) -> None:
        if force:
            await client.stop_container(full_id, 0)
        await client.remove_container(full_id)

    _each(ctx, containers, container_id, remove, "{}")


@crictl.command()
@click.argument("pods", nargs=-1, required=True)
@click.pass_context
def stopp(ctx: click.Context, pods: tuple[str, ...]) -> None:
    """Stop pod sandboxes (and their containers)."""
    _each(ctx, pods, pod_id, lambda client, full_id: client.stop_pod_sandbox(full_id), "Stopped sandbox {}")


@crictl.command()
@click.argument("pods", nargs=-1, required=True)
@click.pass_context
def rmp(ctx: click.Context, pods: tuple[str, ...]) -> None:
    """Remove pod sandboxes (and their containers)."""
    _each(ctx, pods, pod_id, lambda client, full_id: client.remove_pod_sandbox(full_id), "Removed sandbox {}")


def _each(
    ctx: click.Context,
    prefixes: Sequence[str],
    resolve: Callable[[RuntimeClient, str], Awaitable[str]],
    action: Callable[[RuntimeClient, str], Awaitable[None]],
    done: str,
) -> None:
    """Resolves each ID prefix, applies `action` to it and prints `done` with the full ID, in order."""

    async def work(client: RuntimeClient) -> None:
        for prefix in prefixes:
            full_id = await resolve(client, prefix)
            await action(client, full_id)
            click.echo(done.format(full_id))

    run(ctx, work)
