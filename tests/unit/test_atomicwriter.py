"""The atomic writer's directory layout: a timestamped payload, `..data` pointing at it, one symlink per
top-level name; updates swap the payload and leave no stale names behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from minikube_py.kubelet import atomicwriter
from minikube_py.kubelet.atomicwriter import DATA_LINK, AtomicWriteError


def payload_of(directory: Path) -> str:
    return os.readlink(directory / DATA_LINK)


def visible(directory: Path) -> dict[str, bytes]:
    """What a container sees: every file reachable through the top-level names."""
    found = {}
    for entry in directory.iterdir():
        if entry.name.startswith(".."):
            continue
        paths = [entry] if entry.is_file() else [p for p in entry.rglob("*") if p.is_file()]
        for path in paths:
            found[str(path.relative_to(directory))] = path.read_bytes()
    return found


def test_a_new_directory_gets_the_payload_the_data_link_and_one_symlink_per_top_level_name(tmp_path: Path) -> None:
    directory = tmp_path / "pods" / "uid" / "volumes" / "kubernetes.io~projected" / "kube-api-access"
    assert atomicwriter.write(directory, {"token": (b"t", 0o600), "ca.crt": (b"c", 0o644),
                                          "labels/app": (b"web", 0o644)})
    payload = payload_of(directory)
    assert payload.startswith("..") and (directory / payload).is_dir()
    assert sorted(p.name for p in directory.iterdir()) == sorted([payload, DATA_LINK, "token", "ca.crt", "labels"])
    assert os.readlink(directory / "token") == f"{DATA_LINK}/token"
    assert visible(directory) == {"token": b"t", "ca.crt": b"c", "labels/app": b"web"}
    assert stat.S_IMODE((directory / "token").stat().st_mode) == 0o600
    assert stat.S_IMODE((directory / "ca.crt").stat().st_mode) == 0o644


def test_modes_are_as_asked_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o077)
    try:
        atomicwriter.write(tmp_path / "v", {"shared": (b"x", 0o666)})
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "v" / "shared").stat().st_mode) == 0o666


def test_an_update_swaps_the_payload_and_removes_the_old_one_and_dropped_names(tmp_path: Path) -> None:
    directory = tmp_path / "v"
    atomicwriter.write(directory, {"a": (b"1", 0o644), "b": (b"2", 0o644)})
    first = payload_of(directory)
    assert atomicwriter.write(directory, {"a": (b"one", 0o644)})
    assert payload_of(directory) != first
    assert not (directory / first).exists()
    assert not (directory / "b").is_symlink()
    assert visible(directory) == {"a": b"one"}


def test_writing_the_same_files_again_changes_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "v"
    atomicwriter.write(directory, {"a": (b"1", 0o644)})
    first = payload_of(directory)
    assert not atomicwriter.write(directory, {"a": (b"1", 0o644)})
    assert payload_of(directory) == first


def test_a_directory_that_exists_but_is_empty_is_filled(tmp_path: Path) -> None:
    directory = tmp_path / "v"
    directory.mkdir()
    assert atomicwriter.write(directory, {"a": (b"1", 0o644)})
    assert visible(directory) == {"a": b"1"}


@pytest.mark.parametrize("bad", ["/etc/passwd", "../escape", "a/../../b", "..data", ""])
def test_paths_that_leave_the_volume_or_clash_with_the_writers_names_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(AtomicWriteError):
        atomicwriter.write(tmp_path / "v", {bad: (b"x", 0o644)})
    assert not (tmp_path / "v").exists()
