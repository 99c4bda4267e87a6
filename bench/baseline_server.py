"""Floors for the apiserver's HTTP serving: bare Starlette routes, served exactly as the apiserver is.

Every server here runs through the apiserver's own `uvicorn_config`: the same TLS certificate and key,
client-certificate verification against the same CA, the same HTTP protocol class (which also extracts the
peer certificate per connection), uvloop, keep-alive, no access log. Two kinds of route:

* `--body FILE`: every request is answered 200 with FILE's bytes. The floor of HTTP + TLS; the difference
  between it and the apiserver is everything the apiserver does per request.
* `--etcd URL --etcd-key KEY`: a GET answers with the value of KEY, read from etcd per request; a POST stores
  its body under a new key `KEY-<n>` (create-if-absent) and answers 201 with it. Both through `EtcdStorage`,
  as the apiserver does. The floor of any apiserver that makes one etcd round trip per request: the
  difference between it and the apiserver is the apiserver's own logic.

bench_get.py and bench_create.py compare against these; bench_up.py uses `--body` as its start-up floor.

    python -m bench.baseline_server --port 8443 --cert apiserver.crt --key apiserver.key --client-ca ca.crt \
        (--body pod.json | --etcd http://127.0.0.1:2379 --etcd-key /registry/pods/bench/web)
"""

from __future__ import annotations

import argparse
import itertools
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from minikube_py.apiserver.options import ServerOptions
from minikube_py.apiserver.server import uvicorn_config
from minikube_py.cli.supervisor import probe_https
from minikube_py.store.etcd import EtcdStorage

READY_TIMEOUT = 30.0
JSON = "application/json"


def static_app(body: bytes) -> Starlette:
    async def fixed(request: Request) -> Response:
        return Response(body, media_type=JSON)

    return Starlette(routes=[Route("/{path:path}", fixed)])


def etcd_app(endpoint: str, key: str) -> Starlette:
    storage: list[EtcdStorage] = []
    serial = itertools.count()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        storage.append(await EtcdStorage.connect([endpoint]))
        yield
        await storage[0].close()

    async def read(request: Request) -> Response:
        kv = await storage[0].get(key)
        return Response(kv.value if kv else b"{}", status_code=200 if kv else 404, media_type=JSON)

    async def create(request: Request) -> Response:
        body = await request.body()
        await storage[0].create(f"{key}-{next(serial)}", body)
        return Response(body, status_code=201, media_type=JSON)

    return Starlette(routes=[Route("/{path:path}", read, methods=["GET"]),
                             Route("/{path:path}", create, methods=["POST"])], lifespan=lifespan)


def start(port: int, tls: tuple[Path, Path, Path], log: Path, *route: str) -> subprocess.Popen[bytes]:
    """Run a server as a child process (as the apiserver runs) and return once it answers.

    `tls` is (serving certificate, its key, client CA); `route` the route's options, e.g. ("--body", "f").
    """
    cert, key, client_ca = tls
    argv = [sys.executable, "-m", "bench.baseline_server", f"--port={port}", f"--cert={cert}", f"--key={key}",
            f"--client-ca={client_ca}", *route]
    with open(log, "ab") as out:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    context = ssl.create_default_context(cafile=str(client_ca))
    deadline = time.monotonic() + READY_TIMEOUT
    # any HTTP answer will do (the etcd route may answer 404): the probe only fails on connection errors
    while probe_https("127.0.0.1", port, "/", context).detail.startswith("unreachable"):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"baseline server on port {port} did not start; see {log}")
        time.sleep(0.01)
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--client-ca", required=True)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--body", type=Path, help="answer every request with this file's bytes")
    source.add_argument("--etcd", metavar="URL", help="read and create the etcd key given by --etcd-key")
    parser.add_argument("--etcd-key", default="/bench/baseline")
    args = parser.parse_args()
    options = ServerOptions(bind_address="127.0.0.1", secure_port=args.port, tls_cert_file=args.cert,
                            tls_private_key_file=args.key, client_ca_file=args.client_ca)
    app: Any = static_app(args.body.read_bytes()) if args.body else etcd_app(args.etcd, args.etcd_key)
    uvicorn.Server(uvicorn_config(options, app)).run()


if __name__ == "__main__":
    main()
