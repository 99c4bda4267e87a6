"""Encryption at rest against a real etcd: what etcd holds, what the API returns, and key rotation."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from minikube_py.store.etcd import EtcdStorage
from minikube_py.store.etcd_server import etcdctl_binary
from tests.harness import ControlPlane

KEY1, KEY2 = os.urandom(32), os.urandom(32)


def write_config(path: Path, *keys: tuple[str, bytes]) -> None:
    listed = ", ".join(f"{{name: {name}, secret: {base64.b64encode(secret).decode()}}}" for name, secret in keys)
    path.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
                    f"- resources: [secrets]\n  providers:\n  - aescbc: {{keys: [{listed}]}}\n")


@pytest.fixture(scope="module")
def encrypted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ControlPlane, Path]]:
    config = tmp_path_factory.mktemp("enc") / "encryption.yaml"
    write_config(config, ("key1", KEY1))
    cp = ControlPlane(extra_args=(f"--encryption-provider-config={config}",))
    try:
        yield cp.start(), config
    finally:
        cp.stop()


def raw(cp: ControlPlane, key: str) -> bytes:
    async def read() -> bytes:
        storage = await EtcdStorage.connect(cp.etcd_endpoints)
        try:
            kv = await storage.get(key)
            assert kv is not None, key
            return kv.value
        finally:
            await storage.close()

    return asyncio.run(read())


def new_namespace(api: httpx.Client) -> str:
    name = f"enc-{uuid.uuid4().hex[:8]}"
    r = api.post("/api/v1/namespaces", json={"metadata": {"name": name}})
    assert r.status_code == 201, r.text
    return name


def create_secret(api: httpx.Client, ns: str, name: str, value: str) -> None:
    r = api.post(f"/api/v1/namespaces/{ns}/secrets", json={"metadata": {"name": name}, "stringData": {"v": value}})
    assert r.status_code == 201, r.text


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_secrets_are_encrypted_in_etcd_and_plain_through_the_api(encrypted: tuple[ControlPlane, Path]) -> None:
    cp, _ = encrypted
    with cp.client() as api:
        ns = new_namespace(api)
        create_secret(api, ns, "db", "hunter2-plaintext")
        stored = raw(cp, f"/registry/secrets/{ns}/db")
        assert stored.startswith(b"k8s:enc:aescbc:v1:key1:")
        assert b"hunter2" not in stored and b64("hunter2-plaintext").encode() not in stored
        assert api.get(f"/api/v1/namespaces/{ns}/secrets/db").json()["data"] == {"v": b64("hunter2-plaintext")}
        listed = api.get(f"/api/v1/namespaces/{ns}/secrets").json()["items"]
        assert [item["data"] for item in listed] == [{"v": b64("hunter2-plaintext")}]
        r = api.post(f"/api/v1/namespaces/{ns}/configmaps", json={"metadata": {"name": "cfg"}, "data": {"k": "open"}})
        assert r.status_code == 201, r.text
        assert raw(cp, f"/registry/configmaps/{ns}/cfg").startswith(b"{")


def test_etcdctl_shows_the_encrypted_prefix(encrypted: tuple[ControlPlane, Path]) -> None:
    cp, _ = encrypted
    with cp.client() as api:
        ns = new_namespace(api)
        create_secret(api, ns, "tls", "private")
    out = subprocess.run([etcdctl_binary(), f"--endpoints={cp.etcd_endpoints[0]}", "get", "--print-value-only",
                          f"/registry/secrets/{ns}/tls"], capture_output=True, check=True, timeout=30).stdout
    assert out.startswith(b"k8s:enc:aescbc:v1:key1:") and b"private" not in out


def test_watch_events_carry_decrypted_objects(encrypted: tuple[ControlPlane, Path]) -> None:
    cp, _ = encrypted
    with cp.client() as api:
        ns = new_namespace(api)
        create_secret(api, ns, "w", "watched")
        r = api.get(f"/api/v1/namespaces/{ns}/secrets", params={"watch": "true", "resourceVersion": "0",
                                                                "timeoutSeconds": "1"})
        assert r.status_code == 200 and b64("watched") in r.text and "k8s:enc" not in r.text


def test_rotation_add_key_rewrite_remove_old_key(encrypted: tuple[ControlPlane, Path]) -> None:
    cp, config = encrypted
    with cp.client() as api:
        ns = new_namespace(api)
        create_secret(api, ns, "rotated", "r1")
        create_secret(api, ns, "forgotten", "f1")
    try:
        write_config(config, ("key2", KEY2), ("key1", KEY1))
        cp.stop_apiserver()
        cp.start_apiserver()
        with cp.client() as api:
            secret = api.get(f"/api/v1/namespaces/{ns}/secrets/rotated").json()
            assert secret["data"] == {"v": b64("r1")}
            # an unchanged replace still writes: the value was read with an old key (KeyValue.stale)
            r = api.put(f"/api/v1/namespaces/{ns}/secrets/rotated", json=secret)
            assert r.status_code == 200, r.text
        assert raw(cp, f"/registry/secrets/{ns}/rotated").startswith(b"k8s:enc:aescbc:v1:key2:")
        write_config(config, ("key2", KEY2))
        cp.stop_apiserver()
        cp.start_apiserver()
        with cp.client() as api:
            assert api.get(f"/api/v1/namespaces/{ns}/secrets/rotated").json()["data"] == {"v": b64("r1")}
            r = api.get(f"/api/v1/namespaces/{ns}/secrets/forgotten")
            assert r.status_code == 500, r.text
            assert r.json()["reason"] == "InternalError"
            assert r.json()["message"] == (f'Internal error occurred: unable to transform key '
                                           f'"/registry/secrets/{ns}/forgotten": no matching prefix found')
    finally:
        write_config(config, ("key1", KEY1), ("key2", KEY2))
        cp.stop_apiserver()
        cp.start_apiserver()


def test_a_bad_config_stops_the_apiserver_with_a_one_line_error(tmp_path: Path) -> None:
    config = tmp_path / "enc.yaml"
    config.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
                      "- resources: [secrets]\n  providers:\n  - aescbc: {keys: [{name: k, secret: c2hvcnQ=}]}\n")
    done = subprocess.run([sys.executable, "-m", "minikube_py.cli.main", "apiserver",
                           f"--encryption-provider-config={config}"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert str(config) in done.stderr
    assert "secret is not of the expected length, got 5, expected one of [16 24 32]" in done.stderr
    assert "Traceback" not in done.stderr
