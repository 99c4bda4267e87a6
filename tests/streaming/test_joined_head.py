"""The HTTP protocol sends a response's head with its body in one write when the length is known, and at
once when it is not (a streamed response) or when no body follows (HEAD)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from minikube_py.streaming.uvicorn_protocols import JOIN_LIMIT, StreamingHttpProtocol, _JoinedHeadTransport


class RecordingTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


HEAD_WITH_LENGTH = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n"
CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"


def test_a_head_announcing_a_length_goes_out_with_the_body() -> None:
    real = RecordingTransport()
    transport = _JoinedHeadTransport(real, hold=True)  # type: ignore[arg-type]
    transport.write(HEAD_WITH_LENGTH)
    assert real.writes == []
    transport.write(b"{}")
    assert real.writes == [HEAD_WITH_LENGTH + b"{}"]


def test_a_big_body_follows_its_head_in_a_write_of_its_own() -> None:
    real = RecordingTransport()
    transport = _JoinedHeadTransport(real, hold=True)  # type: ignore[arg-type]
    body = b"x" * (JOIN_LIMIT + 1)
    transport.write(HEAD_WITH_LENGTH)
    transport.write(body)
    assert real.writes == [HEAD_WITH_LENGTH, body]


def test_a_streamed_head_and_a_head_request_go_out_at_once() -> None:
    real = RecordingTransport()
    _JoinedHeadTransport(real, hold=True).write(CHUNKED_HEAD)  # type: ignore[arg-type]
    _JoinedHeadTransport(real, hold=False).write(HEAD_WITH_LENGTH)  # type: ignore[arg-type]
    assert real.writes == [CHUNKED_HEAD, HEAD_WITH_LENGTH]


def test_a_held_head_is_written_before_the_connection_closes() -> None:
    real = RecordingTransport()
    transport = _JoinedHeadTransport(real, hold=True)  # type: ignore[arg-type]
    transport.write(HEAD_WITH_LENGTH)
    transport.close()
    assert real.writes == [HEAD_WITH_LENGTH] and real.closed
    assert transport.is_closing()  # everything else is the connection's own


async def _stream() -> AsyncIterator[bytes]:
    yield b"first\n"
    await asyncio.sleep(0.2)
    yield b"second\n"


async def plain(request: Request) -> Response:
    return Response(b"hello", media_type="text/plain")


async def streamed(request: Request) -> StreamingResponse:
    return StreamingResponse(_stream(), media_type="text/plain")


@pytest.fixture
async def server() -> AsyncIterator[int]:
    app = Starlette(routes=[Route("/plain", plain, methods=["GET", "HEAD"]), Route("/stream", streamed)])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, http=StreamingHttpProtocol, log_level="warning", lifespan="off")
    instance = uvicorn.Server(config)
    task = asyncio.create_task(instance.serve(sockets=[sock]))
    while not instance.started:
        await asyncio.sleep(0.01)
    yield sock.getsockname()[1]
    instance.should_exit = True
    await task


async def _exchange(port: int, request: bytes, until: bytes) -> tuple[bytes, list[bytes]]:
    """Send `request`, read until `until` arrives; the bytes and how they arrived, read by read."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    received, reads = b"", []
    while until not in received:
        chunk = await asyncio.wait_for(reader.read(65536), 5)
        if not chunk:
            break
        reads.append(chunk)
        received += chunk
    writer.close()
    return received, reads


async def test_answers_keep_their_bytes_over_a_real_connection(server: int) -> None:
    body, _ = await _exchange(server, b"GET /plain HTTP/1.1\r\nhost: x\r\n\r\n", b"hello")
    assert body.startswith(b"HTTP/1.1 200 OK\r\n") and body.endswith(b"\r\n\r\nhello")
    head, _ = await _exchange(server, b"HEAD /plain HTTP/1.1\r\nhost: x\r\n\r\n", b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"content-length: 5" in head


async def test_a_streamed_response_shows_its_head_and_first_chunk_before_the_rest(server: int) -> None:
    received, reads = await _exchange(server, b"GET /stream HTTP/1.1\r\nhost: x\r\n\r\n", b"0\r\n\r\n")
    assert b"transfer-encoding: chunked" in received and b"second" in received
    assert b"second" not in reads[0]  # the head did not wait for the end of the stream
