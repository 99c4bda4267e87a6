"""The images every containerd node has without a registry: pause and busybox, built from busybox-static.

These machines cannot reach a registry, and containerd's PullImage asks the registry even for an image it
already has, so mkpy builds its images from the host's statically linked busybox (Debian's busybox-static,
one ~2 MB binary that is sh, sleep, httpd, wget, nc, ... depending on the name it is called by) and imports
them into each node before the kubelet starts:

    registry.k8s.io/pause:3.10        the sandbox ("pause") container that holds a pod's namespaces: a shell
                                      that sleeps forever and exits at once on SIGTERM or SIGINT
    docker.io/library/busybox:latest  busybox with every applet linked in /bin, Cmd ["sh"]

Both use the same single layer, so a node stores it once. The archives are cached in a directory and built
only when missing (a build takes well under a second):

    for archive in builtin_images(cluster_dir / "images"):
        import_image(layout.socket, archive)
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

from minikube_py.kubelet.images.oci import ImageConfig, LayerBuilder, write_archive

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
BUSYBOX_IMAGE = "docker.io/library/busybox:latest"
# PID 1 ignores signals it has no handler for, so without the trap SIGTERM would do nothing and the runtime
# would wait out the grace period before killing the sandbox. `sleep & wait` lets the trap run at once.
PAUSE_SCRIPT = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait; done"
IMAGE_CONFIGS = {
    PAUSE_IMAGE: ImageConfig(entrypoint=("/bin/sh", "-c", PAUSE_SCRIPT)),
    BUSYBOX_IMAGE: ImageConfig(cmd=("sh",)),
}
PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n"
GROUP = "root:x:0:\nnobody:x:65534:\n"
_PT_INTERP = 3  # ELF program header type naming the dynamic loader: present in dynamically linked binaries


def builtin_images(cache_dir: Path) -> list[Path]:
    """The archives of the built-in images (pause first), building the missing ones into `cache_dir`."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    archives = {reference: cache_dir / archive_name(reference) for reference in IMAGE_CONFIGS}
    missing = [reference for reference, archive in archives.items() if not archive.exists()]
    if missing:
        layer = busybox_layer(find_busybox())
        for reference in missing:
            write_archive(archives[reference], reference, [layer], IMAGE_CONFIGS[reference])
    return list(archives.values())


def archive_name(reference: str) -> str:
    """The cache file name of an image: "registry.k8s.io/pause:3.10" -> "registry.k8s.io_pause_3.10.tar"."""
    return reference.replace("/", "_").replace(":", "_") + ".tar"


def find_busybox() -> Path:
    """The host's busybox, which must be statically linked: the images hold no C library."""
    found = shutil.which("busybox")
    if found is None:
        raise RuntimeError("busybox not found: install busybox-static (scripts/setup-containerd does)")
    if not is_static_executable(Path(found)):
        raise RuntimeError(f"{found} is dynamically linked and would not run inside an image: "
                           "install busybox-static (scripts/setup-containerd does)")
    return Path(found)


def is_static_executable(path: Path) -> bool:
    """Whether `path` is an ELF executable without a dynamic loader (no PT_INTERP program header)."""
    with path.open("rb") as binary:
        header = binary.read(64)
        if header[:4] != b"\x7fELF":
            return False
        wide, order = header[4] == 2, "<" if header[5] == 1 else ">"
        phoff, = struct.unpack_from(order + ("Q" if wide else "I"), header, 0x20 if wide else 0x1C)
        entry_size, count = struct.unpack_from(order + "HH", header, 0x36 if wide else 0x2A)
        binary.seek(phoff)
        table = binary.read(entry_size * count)
    return all(struct.unpack_from(order + "I", table, i * entry_size)[0] != _PT_INTERP for i in range(count))


def busybox_layer(busybox: Path) -> bytes:
    """A root filesystem of busybox: /bin/busybox, a symlink per applet in /bin, and the usual directories."""
    applets = subprocess.run([str(busybox), "--list"], capture_output=True, text=True, check=True).stdout.split()
    layer = LayerBuilder()
    for directory in ("bin", "dev", "etc", "home", "proc", "root", "sys", "usr", "var"):
        layer.directory(directory, mode=0o700 if directory == "root" else 0o755)
    layer.directory("tmp", mode=0o1777)
    layer.file("bin/busybox", busybox.read_bytes(), mode=0o755)
    for applet in sorted(set(applets) - {"busybox"}):
        layer.symlink(f"bin/{applet}", "busybox")
    layer.file("etc/passwd", PASSWD.encode())
    layer.file("etc/group", GROUP.encode())
    return layer.tobytes()
