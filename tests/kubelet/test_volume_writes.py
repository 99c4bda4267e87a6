"""The volume manager writes a configMap, secret, downwardAPI or projected volume only when its content
changed: every sync of a pod sets its volumes up again, and most find them as they were."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minikube_py.kubelet.volumes import VolumeManager

UID = "6f1c3a5e-0000-4000-8000-000000000001"


def pod(uid: str = UID) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "default", "uid": uid},
            "spec": {"volumes": [{"name": "config", "configMap": {"name": "settings"}}]}}


def manager(root: Path, data: dict[str, str]) -> VolumeManager:
    async def objects(kind: str, namespace: str, name: str) -> dict[str, Any]:
        assert (kind, name) == ("configmaps", "settings")
        return {"metadata": {"name": name, "namespace": namespace}, "data": dict(data)}

    async def no_token(*args: Any) -> tuple[str, float]:
        raise AssertionError("no service account token volume here")

    return VolumeManager(root / "pods", objects, no_token, lambda: {})


def payload(directory: Path) -> str:
    return (directory / "..data").readlink().name


async def test_an_unchanged_volume_is_not_written_again_and_a_changed_one_is(tmp_path: Path) -> None:
    data = {"mode": "fast"}
    volumes = manager(tmp_path, data)
    directory = (await volumes.set_up(pod()))["config"]
    first = payload(directory)
    assert (directory / "mode").read_text() == "fast"
    assert payload((await volumes.set_up(pod()))["config"]) == first  # nothing changed: same payload
    data["mode"] = "slow"
    assert payload((await volumes.set_up(pod()))["config"]) != first
    assert (directory / "mode").read_text() == "slow"


async def test_a_pod_torn_down_and_set_up_again_gets_its_files_back(tmp_path: Path) -> None:
    volumes = manager(tmp_path, {"mode": "fast"})
    directory = (await volumes.set_up(pod()))["config"]
    volumes.tear_down(UID)
    assert not directory.exists()
    assert ((await volumes.set_up(pod()))["config"] / "mode").read_text() == "fast"
