"""Importing image archives into a node's containerd, where CRI (and so the kubelet) can see them.

Accepts what `docker save` writes and OCI image archives (`write_archive`, `podman save --format
oci-archive`, `skopeo copy ... oci-archive:`), uncompressed. The import goes through `ctr`, containerd's own
client, into the `k8s.io` namespace: the one containerd's CRI plugin serves; images in any other namespace
are invisible to the kubelet. `ctr` also unpacks the layers into snapshots, so pods start without delay.

    refs = import_image(layout.socket, Path("myapp.tar"))   # ["docker.io/library/myapp:1.0"]

The archive is checked before containerd is asked, so a wrong file gets a clear error rather than ctr's.
"""

from __future__ import annotations

import re
import subprocess
import tarfile
from pathlib import Path

CRI_NAMESPACE = "k8s.io"
_UNPACKED_RE = re.compile(r"^unpacking (\S+) \(sha256:[0-9a-f]{64}\)\.\.\.done$", re.MULTILINE)
_COMPRESSED_MAGIC = {b"\x1f\x8b": "gzip", b"\x28\xb5": "zstd", b"BZ": "bzip2", b"\xfd7": "xz"}


class ImageImportError(Exception):
    """The archive is not an image archive, or containerd refused it."""


def check_archive(archive: Path) -> None:
    """Raises ImageImportError unless `archive` is an uncompressed docker-save or OCI image archive."""
    if not archive.is_file():
        raise ImageImportError(f"{archive}: no such file")
    with archive.open("rb") as stream:
        compression = _COMPRESSED_MAGIC.get(stream.read(2))
    if compression:
        raise ImageImportError(f"{archive} is {compression}-compressed: decompress it first")
    try:
        with tarfile.open(archive, "r:") as tar:
            names = {member.name.removeprefix("./") for member in tar}
    except tarfile.TarError:
        raise ImageImportError(f"{archive} is not an image archive (not a tar file); "
                               "create one with `docker save IMAGE -o FILE`") from None
    if "manifest.json" not in names and not {"oci-layout", "index.json"} <= names:
        raise ImageImportError(f"{archive} is a tar file but not an image archive (it has neither docker's "
                               "manifest.json nor an OCI index.json); create one with `docker save IMAGE -o FILE`")


def import_image(socket: str | Path, archive: Path) -> list[str]:
    """Imports the images of `archive` into the containerd at `socket`; returns their references."""
    check_archive(archive)
    if not Path(socket).exists():
        raise ImageImportError(f"no containerd at {socket} (is the node running?)")
    result = subprocess.run(
        ["ctr", "--address", str(socket), "--namespace", CRI_NAMESPACE, "--connect-timeout", "5s",
         "images", "import", str(archive)],
        capture_output=True, text=True,
    )
    if result.returncode != 0:
        raise ImageImportError(f"importing {archive} into {socket} failed: {result.stderr.strip()}")
    references = _UNPACKED_RE.findall(result.stdout)
    if not references:
        raise ImageImportError(f"{archive} names no image (untagged?): tag it before saving it")
    return references
