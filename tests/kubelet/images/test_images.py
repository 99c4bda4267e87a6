"""Offline images without containerd: the OCI archive format, the built-in images, bad archives.

Importing into a real containerd (and `mkpy image load` doing it for every node) is tested with the
containerd nodes in tests/kubelet/runtime/test_containerd.py.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import sys
import tarfile
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from minikube_py.cli.image import image
from minikube_py.kubelet.images.builtin import (
    BUSYBOX_IMAGE,
    PAUSE_IMAGE,
    PAUSE_SCRIPT,
    builtin_images,
    find_busybox,
    is_static_executable,
)
from minikube_py.kubelet.images.importer import ImageImportError, check_archive
from minikube_py.kubelet.images.oci import (
    IMAGE_NAME_ANNOTATION,
    REF_NAME_ANNOTATION,
    ImageConfig,
    LayerBuilder,
    digest,
    host_platform,
    parse_reference,
    write_archive,
)


def read_archive(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as archive:
        return {member.name: archive.extractfile(member).read() for member in archive if member.isfile()}


def blob(files: dict[str, bytes], blob_digest: str) -> bytes:
    return files["blobs/sha256/" + blob_digest.removeprefix("sha256:")]


def hello_layer() -> bytes:
    layer = LayerBuilder()
    layer.directory("bin")
    layer.file("bin/hello", b"#!/bin/sh\necho hello\n", mode=0o755)
    layer.symlink("bin/hi", "hello")
    return layer.tobytes()


def test_an_archive_is_an_oci_layout_whose_index_names_the_image(tmp_path: Path) -> None:
    layer = hello_layer()
    config = ImageConfig(entrypoint=("/bin/hello",), cmd=("--loud",), env=("PATH=/bin", "GREETING=hi"),
                         working_dir="/bin")
    manifest_digest = write_archive(tmp_path / "hello.tar", "example.com/team/hello:1.0", [layer], config)

    files = read_archive(tmp_path / "hello.tar")
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    [entry] = json.loads(files["index.json"])["manifests"]
    assert entry["digest"] == manifest_digest
    assert entry["annotations"] == {IMAGE_NAME_ANNOTATION: "example.com/team/hello:1.0", REF_NAME_ANNOTATION: "1.0"}
    assert entry["platform"] == host_platform()
    manifest = json.loads(blob(files, manifest_digest))
    assert digest(blob(files, manifest_digest)) == manifest_digest
    assert [layer_entry["digest"] for layer_entry in manifest["layers"]] == [digest(layer)]
    image_config = json.loads(blob(files, manifest["config"]["digest"]))
    assert image_config["config"] == {"Entrypoint": ["/bin/hello"], "Cmd": ["--loud"],
                                      "Env": ["PATH=/bin", "GREETING=hi"], "WorkingDir": "/bin"}
    assert image_config["rootfs"] == {"type": "layers", "diff_ids": [digest(layer)]}
    [docker_entry] = json.loads(files["manifest.json"])
    assert docker_entry["RepoTags"] == ["example.com/team/hello:1.0"]
    assert docker_entry["Layers"] == ["blobs/sha256/" + digest(layer)[7:]]


def test_a_layer_holds_root_owned_files_and_symlinks() -> None:
    with tarfile.open(fileobj=io.BytesIO(hello_layer())) as layer:
        members = {member.name: member for member in layer}
    assert set(members) == {"bin", "bin/hello", "bin/hi"}
    assert members["bin"].isdir()
    assert members["bin/hello"].mode == 0o755 and members["bin/hello"].uid == 0
    assert members["bin/hi"].issym() and members["bin/hi"].linkname == "hello"


def test_the_same_inputs_give_the_same_digests(tmp_path: Path) -> None:
    first = write_archive(tmp_path / "a.tar", "example.com/hello:1", [hello_layer()], ImageConfig(cmd=("a",)))
    second = write_archive(tmp_path / "b.tar", "example.com/hello:1", [hello_layer()], ImageConfig(cmd=("a",)))
    other = write_archive(tmp_path / "c.tar", "example.com/hello:1", [hello_layer()], ImageConfig(cmd=("b",)))
    assert first == second != other


@pytest.mark.parametrize("reference", [
    "busybox",                      # no registry, no tag
    "busybox:latest",               # no registry
    "docker.io/library/busybox",    # no tag
    "docker.io/library/BusyBox:1",  # upper case repository
    "docker.io/library/busybox:",   # empty tag
])
def test_an_image_reference_must_be_complete(reference: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=re.escape(f"invalid image reference '{reference}'")):
        write_archive(tmp_path / "x.tar", reference, [hello_layer()], ImageConfig())
    assert not list(tmp_path.iterdir())


def test_a_reference_splits_into_repository_and_tag() -> None:
    assert parse_reference("localhost:5000/a/b:v1.2") == ("localhost:5000/a/b", "v1.2")
    assert parse_reference(PAUSE_IMAGE) == ("registry.k8s.io/pause", "3.10")


def test_builtin_images_are_busybox_built_once_and_cached(tmp_path: Path) -> None:
    archives = builtin_images(tmp_path / "images")
    assert [path.parent for path in archives] == [tmp_path / "images"] * 2
    built = [path.stat().st_mtime_ns for path in archives]
    assert builtin_images(tmp_path / "images") == archives
    assert [path.stat().st_mtime_ns for path in archives] == built, "cached archives were rebuilt"

    pause, busybox = (read_archive(path) for path in archives)
    names = [json.loads(files["index.json"])["manifests"][0]["annotations"][IMAGE_NAME_ANNOTATION]
             for files in (pause, busybox)]
    assert names == [PAUSE_IMAGE, BUSYBOX_IMAGE]
    configs = [image_config(files) for files in (pause, busybox)]
    assert configs[0]["config"]["Entrypoint"] == ["/bin/sh", "-c", PAUSE_SCRIPT]
    assert configs[1]["config"]["Cmd"] == ["sh"]
    assert configs[0]["rootfs"] == configs[1]["rootfs"], "pause and busybox should share their one layer"

    [layer_path] = json.loads(busybox["manifest.json"])[0]["Layers"]
    with tarfile.open(fileobj=io.BytesIO(busybox[layer_path])) as layer:
        members = {member.name: member for member in layer}
        passwd = layer.extractfile(members["etc/passwd"]).read()
    assert members["bin/busybox"].size == find_busybox().stat().st_size
    for applet in ("sh", "httpd", "wget", "nc", "sleep", "cat"):
        assert members[f"bin/{applet}"].linkname == "busybox"
    assert members["tmp"].mode == 0o1777
    assert passwd.startswith(b"root:x:0:0:")


def image_config(files: dict[str, bytes]) -> dict:
    manifest_digest = json.loads(files["index.json"])["manifests"][0]["digest"]
    manifest = json.loads(blob(files, manifest_digest))
    return json.loads(blob(files, manifest["config"]["digest"]))


def test_busybox_in_an_image_must_be_static() -> None:
    assert is_static_executable(find_busybox())
    assert not is_static_executable(Path(sys.executable).resolve())  # Python links libc dynamically
    assert not is_static_executable(Path(__file__))  # not ELF at all


# --- archives that are not images -----------------------------------------------------------------------


def tar_with(path: Path, names: list[str]) -> Path:
    with tarfile.open(path, "w") as archive:
        for name in names:
            info = tarfile.TarInfo(name)
            info.size = 2
            archive.addfile(info, io.BytesIO(b"{}"))
    return path


@pytest.mark.parametrize(("make", "message"), [
    pytest.param(lambda tmp: tmp / "absent.tar", "absent.tar: no such file", id="missing file"),
    pytest.param(lambda tmp: tmp, "no such file", id="a directory"),
    pytest.param(lambda tmp: write(tmp / "notes.txt", b"just some text\n" * 100),
                 "notes.txt is not an image archive (not a tar file)", id="a text file"),
    pytest.param(lambda tmp: write(tmp / "empty.tar", b""), "not an image archive (not a tar file)", id="empty"),
    pytest.param(lambda tmp: tar_with(tmp / "src.tar", ["README", "main.py"]),
                 "src.tar is a tar file but not an image archive", id="a tar of sources"),
    pytest.param(lambda tmp: tar_with(tmp / "half.tar", ["oci-layout"]),
                 "half.tar is a tar file but not an image archive", id="an OCI layout without index"),
    pytest.param(lambda tmp: write(tmp / "image.tar.gz", gzip.compress(b"x" * 1000)),
                 "image.tar.gz is gzip-compressed: decompress it first", id="gzipped"),
])
def test_a_file_that_is_not_an_image_archive_is_refused_clearly(make, message: str, tmp_path: Path) -> None:
    with pytest.raises(ImageImportError, match=re.escape(message)):
        check_archive(make(tmp_path))


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_archives_written_here_and_docker_save_layouts_are_accepted(tmp_path: Path) -> None:
    write_archive(tmp_path / "oci.tar", "example.com/hello:1", [hello_layer()], ImageConfig())
    check_archive(tmp_path / "oci.tar")
    check_archive(tar_with(tmp_path / "docker.tar", ["manifest.json", "repositories", "abc/layer.tar"]))


# --- `mkpy image load` errors ---------------------------------------------------------------------------


@pytest.fixture
def cluster_nodes(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The nodes `mkpy image load` finds: containerd_sockets() answers from this dict."""
    sockets: dict[str, str] = {}
    nodes = types.ModuleType("minikube_py.cli.nodes")
    nodes.containerd_sockets = lambda cluster_name: dict(sockets)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "minikube_py.cli.nodes", nodes)
    return sockets


@pytest.mark.parametrize(("make", "message"), [
    pytest.param(lambda tmp: tmp / "absent.tar", "absent.tar: no such file", id="missing file"),
    pytest.param(lambda tmp: write(tmp / "notes.txt", b"hello\n"), "notes.txt is not an image archive",
                 id="a text file"),
])
def test_image_load_of_a_bad_file_is_one_line_and_fails(make, message: str, tmp_path: Path,
                                                        cluster_nodes: dict[str, str]) -> None:
    cluster_nodes["node1"] = str(tmp_path / "containerd.sock")
    result = CliRunner().invoke(image, ["load", str(make(tmp_path))])
    assert result.exit_code == 1
    assert message in result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


def test_image_load_into_a_cluster_without_containerd_nodes_fails(tmp_path: Path,
                                                                  cluster_nodes: dict[str, str]) -> None:
    write_archive(tmp_path / "hello.tar", "example.com/hello:1", [hello_layer()], ImageConfig())
    result = CliRunner().invoke(image, ["load", str(tmp_path / "hello.tar"), "--name", "sim"])
    assert result.exit_code == 1
    assert result.output == ('Error: cluster "sim" has no containerd nodes to load images into '
                             "(simulated nodes need none: their fake runtime has every image)\n")


def test_image_load_to_a_node_whose_containerd_is_down_names_the_socket(tmp_path: Path,
                                                                        cluster_nodes: dict[str, str]) -> None:
    write_archive(tmp_path / "hello.tar", "example.com/hello:1", [hello_layer()], ImageConfig())
    cluster_nodes["node1"] = socket = os.fspath(tmp_path / "node1" / "containerd.sock")
    result = CliRunner().invoke(image, ["load", str(tmp_path / "hello.tar")])
    assert result.exit_code == 1
    assert result.output == f"Error: no containerd at {socket} (is the node running?)\n"
