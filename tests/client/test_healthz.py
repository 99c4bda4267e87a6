"""The components' health endpoint: answers per path and check, over real HTTPS with a self-signed certificate."""

from __future__ import annotations

import asyncio
import socket
import ssl
import tempfile
from pathlib import Path

import pytest

from minikube_py.client.healthz import HealthServer, HealthServerError
from minikube_py.store.etcd_server import free_port


@pytest.mark.parametrize("request_line, status, body", [
    ("GET /healthz HTTP/1.1", "200 OK", b"ok"),
    ("GET /readyz HTTP/1.1", "200 OK", b"ok"),
    ("GET /livez?verbose HTTP/1.1", "200 OK", b"[+]ping ok\nlivez check passed\n"),
    ("GET /metrics HTTP/1.1", "404 Not Found", b"404 page not found\n"),
    ("POST /healthz HTTP/1.1", "405 Method Not Allowed", b"only GET is served\n"),
    ("garbage", "405 Method Not Allowed", b"only GET is served\n"),
])
def test_each_path_answers_as_kube_components_do(request_line: str, status: str, body: bytes) -> None:
    assert HealthServer("127.0.0.1", 0).answer(request_line) == (status, body)


def test_a_failing_or_raising_check_makes_the_endpoint_fail_and_names_the_check() -> None:
    server = HealthServer("127.0.0.1", 0)
    server.add_check("leaderElection", lambda: (False, "lease not renewed"))
    server.add_check("broken", lambda: 1 / 0)
    status, body = server.answer("GET /healthz HTTP/1.1")
    assert status == "500 Internal Server Error"
    assert b"[-]leaderElection failed: lease not renewed" in body
    assert b"[-]broken failed: division by zero" in body
    assert b"[+]ping ok" in body


async def test_it_serves_https_with_a_self_signed_certificate_whose_files_are_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the certificate is made
    port = free_port()
    server = HealthServer("127.0.0.1", port)
    await server.start()
    assert list(tmp_path.iterdir()) == []  # no private key left on disk
    try:
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        response = await reader.read()
        writer.close()
        assert response.startswith(b"HTTP/1.1 200 OK") and response.endswith(b"\r\n\r\nok")
    finally:
        await server.stop()


async def test_a_port_already_taken_is_an_error_naming_the_address() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(HealthServerError, match=f"cannot serve /healthz on 127.0.0.1:{port}: "):
            await HealthServer("127.0.0.1", port).start()
