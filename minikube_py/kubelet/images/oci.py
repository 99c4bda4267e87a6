"""Container images as plain files: build a layer and write an OCI image archive, no registry or daemon.

An image is a few JSON documents and tarballs, each stored under its own sha256 digest ("content
addressing"):

    layer        a tar of files, unpacked on top of the layers below it to make the root filesystem
    config       what to run (Entrypoint, Cmd, Env, WorkingDir), platform, and each layer's digest (diff_ids)
    manifest     points at the config and the layers, by digest, size and media type
    index.json   points at the manifest and names it ("registry.k8s.io/pause:3.10")
    oci-layout   marks the directory (or tar) as an OCI image layout

`write_archive` puts these in one tar: the layout `ctr images import`, `docker load` and `skopeo` read.
It also writes docker's `manifest.json`, so the same file loads into Docker. Builds are reproducible
(root-owned files, fixed timestamps): the same inputs always give the same digests.

    layer = LayerBuilder()
    layer.directory("bin")
    layer.file("bin/hello", data, mode=0o755)
    write_archive(Path("hello.tar"), "example.com/hello:1.0", [layer.tobytes()],
                  ImageConfig(entrypoint=("/bin/hello",)))
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar"
CONFIG_MEDIA_TYPE = "application/vnd.oci.image.config.v1+json"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
REF_NAME_ANNOTATION = "org.opencontainers.image.ref.name"  # the OCI spec's name: just the tag
IMAGE_NAME_ANNOTATION = "io.containerd.image.name"  # containerd's and docker's: the full reference
DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CREATED = "1970-01-01T00:00:00Z"  # fixed, so rebuilding gives the same digests
_ARCHITECTURES = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x"}
# registry host (with a dot or a port, or localhost) / path components : tag
_REFERENCE_RE = re.compile(
    r"^(?P<repository>(?:[a-z0-9.-]+\.[a-z0-9.-]+|[a-z0-9.-]+:[0-9]+|localhost)"
    r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)+):(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})$"
)


@dataclass(frozen=True)
class ImageConfig:
    """What a container of the image runs unless the pod says otherwise (command = Entrypoint, args = Cmd)."""

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[str, ...] = (DEFAULT_PATH,)
    working_dir: str = "/"


class LayerBuilder:
    """A filesystem layer assembled in memory; paths are relative to the image's root ("bin/sh")."""

    def __init__(self) -> None:
        self._buffer = io.BytesIO()
        self._tar = tarfile.open(fileobj=self._buffer, mode="w", format=tarfile.PAX_FORMAT)

    def directory(self, path: str, mode: int = 0o755) -> None:
        self._add(path, tarfile.DIRTYPE, mode)

    def file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self._add(path, tarfile.REGTYPE, mode, data=data)

    def symlink(self, path: str, target: str) -> None:
        self._add(path, tarfile.SYMTYPE, 0o777, target=target)

    def tobytes(self) -> bytes:
        """The finished layer tar; the builder cannot be added to afterwards."""
        self._tar.close()
        return self._buffer.getvalue()

    def _add(self, path: str, kind: bytes, mode: int, data: bytes = b"", target: str = "") -> None:
        info = tarfile.TarInfo(path.strip("/"))
        info.type, info.mode, info.size, info.linkname = kind, mode, len(data), target
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        info.mtime = 0
        self._tar.addfile(info, io.BytesIO(data) if data else None)


def parse_reference(reference: str) -> tuple[str, str]:
    """Splits a full image reference "registry.k8s.io/pause:3.10" into repository and tag.

    Archives must carry full references (registry host, path, tag): that is the name the kubelet asks the
    runtime for, so "busybox" alone would never match "docker.io/library/busybox:latest".
    """
    match = _REFERENCE_RE.match(reference)
    if match is None:
        raise ValueError(f"invalid image reference {reference!r}: expected registry/path:tag, "
                         "e.g. docker.io/library/busybox:latest")
    return match["repository"], match["tag"]


def host_platform() -> dict[str, str]:
    """This machine's platform as OCI names it ({"architecture": "amd64", "os": "linux"})."""
    machine = platform.machine()
    return {"architecture": _ARCHITECTURES.get(machine, machine), "os": "linux"}


def write_archive(path: Path, reference: str, layers: list[bytes], config: ImageConfig) -> str:
    """Writes an OCI image archive holding one image for this machine's platform; returns its manifest digest.

    The file appears atomically (written aside, then renamed), so a concurrent reader never sees half of it.
    """
    _, tag = parse_reference(reference)
    blobs: list[bytes] = list(layers)
    config_blob = _json(_config_document(layers, config))
    manifest_blob = _json({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": _descriptor(CONFIG_MEDIA_TYPE, config_blob),
        "layers": [_descriptor(LAYER_MEDIA_TYPE, layer) for layer in layers],
    })
    blobs += [config_blob, manifest_blob]
    manifest_descriptor = _descriptor(MANIFEST_MEDIA_TYPE, manifest_blob)
    manifest_descriptor["platform"] = host_platform()
    manifest_descriptor["annotations"] = {IMAGE_NAME_ANNOTATION: reference, REF_NAME_ANNOTATION: tag}
    index = {"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": [manifest_descriptor]}
    docker_manifest = [{"Config": _blob_path(config_blob), "RepoTags": [reference],
                        "Layers": [_blob_path(layer) for layer in layers]}]

    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tarfile.open(temporary, "w", format=tarfile.PAX_FORMAT) as archive:
        _add_member(archive, "oci-layout", _json({"imageLayoutVersion": "1.0.0"}))
        for blob in blobs:
            _add_member(archive, _blob_path(blob), blob)
        _add_member(archive, "index.json", _json(index))
        _add_member(archive, "manifest.json", _json(docker_manifest))
    os.replace(temporary, path)
    return manifest_descriptor["digest"]


def digest(blob: bytes) -> str:
    return "sha256:" + hashlib.sha256(blob).hexdigest()


def _config_document(layers: list[bytes], config: ImageConfig) -> dict:
    runtime = {"Env": list(config.env), "Entrypoint": list(config.entrypoint), "Cmd": list(config.cmd),
               "WorkingDir": config.working_dir}
    return {
        "created": CREATED,
        **host_platform(),
        "config": {key: value for key, value in runtime.items() if value},
        "rootfs": {"type": "layers", "diff_ids": [digest(layer) for layer in layers]},  # uncompressed layers
    }


def _descriptor(media_type: str, blob: bytes) -> dict:
    return {"mediaType": media_type, "digest": digest(blob), "size": len(blob)}


def _blob_path(blob: bytes) -> str:
    return "blobs/sha256/" + hashlib.sha256(blob).hexdigest()


def _json(document: object) -> bytes:
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode()


def _add_member(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0
    archive.addfile(info, io.BytesIO(data))
