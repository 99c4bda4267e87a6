"""Writing a volume's files so that a container never sees half an update (kube's `AtomicWriter`).

A configMap, secret, downwardAPI or projected volume directory looks like this:

    ..2024_01_02_03_04_05.123456/   the current set of files (a fresh directory per update)
    ..data -> ..2024_01_02_03_04_05.123456
    key1 -> ..data/key1            one symlink per top-level name
    dir/ -> ..data/dir

An update writes a new timestamped directory, then renames a new `..data` symlink over the old one (an atomic
step), then fixes the top-level symlinks and removes the old directory. A reader that opened `key1` before the
swap keeps the old content; one that opens it after gets the new.

Usage rules: `write(directory, files)` with `files` mapping relative paths to (bytes, mode); it returns whether
anything changed, so callers can tell a live update from a no-op. Paths must be relative and stay inside.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

DATA_LINK = "..data"


class AtomicWriteError(ValueError):
    """A file path that would escape the volume or clash with the writer's own names."""


def write(directory: Path, files: dict[str, tuple[bytes, int]]) -> bool:
    for relative in files:
        _check_path(relative)
    fresh = _make_directory(directory)
    if not fresh and _current(directory) == files:
        return False
    stamp = time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime()) + f"{time.time_ns() % 10**9:09d}"
    payload = os.path.join(directory, stamp)
    os.mkdir(payload)
    for relative, (content, mode) in files.items():
        target = os.path.join(payload, relative)
        if "/" in relative:
            os.makedirs(os.path.dirname(target), exist_ok=True)
        _write_file(target, content, mode)
    top_level = {relative.split("/", 1)[0] for relative in files}
    if fresh:  # a directory made just now has no ..data, no symlinks and no older payload to replace
        os.symlink(stamp, os.path.join(directory, DATA_LINK))
        for name in top_level:
            os.symlink(f"{DATA_LINK}/{name}", os.path.join(directory, name))
        return True
    old_payload = _payload_dir(directory)
    temporary = directory / f"{DATA_LINK}_tmp"
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(stamp)
    os.replace(temporary, directory / DATA_LINK)
    for name in top_level:
        link = directory / name
        if not link.is_symlink():
            link.symlink_to(f"{DATA_LINK}/{name}")
    for entry in directory.iterdir():
        if entry.is_symlink() and entry.name != DATA_LINK and entry.name not in top_level:
            entry.unlink()
    if old_payload is not None:
        shutil.rmtree(old_payload, ignore_errors=True)
    return True


def _make_directory(directory: Path) -> bool:
    """Create `directory` and its parents; whether it was created now (False: it was there already)."""
    try:
        os.makedirs(directory)
    except FileExistsError:
        return False
    return True


def _write_file(path: str, content: bytes, mode: int) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(descriptor, mode)  # the mode as asked, whatever the umask
        view = memoryview(content)
        while view:
            view = view[os.write(descriptor, view):]
    finally:
        os.close(descriptor)


def _check_path(relative: str) -> None:
    parts = relative.split("/")
    if not relative or relative.startswith("/") or ".." in parts or parts[0].startswith(".."):
        raise AtomicWriteError(f"invalid path {relative!r}: must be relative, without '..' and not start with '..'")


def _payload_dir(directory: Path) -> Path | None:
    link = directory / DATA_LINK
    return directory / os.readlink(link) if link.is_symlink() else None


def _current(directory: Path) -> dict[str, tuple[bytes, int]] | None:
    payload = _payload_dir(directory)
    if payload is None or not payload.is_dir():
        return None
    found: dict[str, tuple[bytes, int]] = {}
    for path in payload.rglob("*"):
        if path.is_file():
            found[str(path.relative_to(payload))] = (path.read_bytes(), path.stat().st_mode & 0o7777)
    return found
