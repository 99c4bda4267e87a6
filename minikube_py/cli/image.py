"""`mkpy image load FILE`: run your own images without a registry.

The cluster's machines cannot pull from a registry, so images reach the nodes as files: save an image with
`docker save myapp:1.0 -o myapp.tar` (or `podman save --format oci-archive`), then `mkpy image load myapp.tar`
imports it into the containerd of every node of the cluster, and pods can use `image: myapp:1.0` with
`imagePullPolicy: IfNotPresent` (kube's default for a tag other than latest) or `Never`.

Simulated nodes are skipped: their fake runtime has every image. Errors (no such file, not an image archive,
no containerd nodes) are one line and a non-zero exit.
"""

from __future__ import annotations

from pathlib import Path

import click

from minikube_py.cli.cluster import name_option


@click.group()
def image() -> None:
    """Manage the images on the cluster's nodes."""


@image.command()
@click.argument("file", type=click.Path(path_type=Path))
@name_option
def load(file: Path, name: str) -> None:
    """Import a `docker save` or OCI image archive into every node."""
    from minikube_py.cli.nodes import containerd_sockets
    from minikube_py.kubelet.images.importer import ImageImportError, check_archive, import_image

    try:
        check_archive(file)
        sockets = containerd_sockets(name)
        if not sockets:
            raise click.ClickException(f'cluster "{name}" has no containerd nodes to load images into '
                                       "(simulated nodes need none: their fake runtime has every image)")
        for node, socket in sorted(sockets.items()):
            references = import_image(socket, file)
            click.echo(f"{node}: loaded {', '.join(references)}")
    except ImageImportError as error:
        raise click.ClickException(str(error)) from None
