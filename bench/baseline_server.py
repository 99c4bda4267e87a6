"""The floor for the apiserver's HTTP serving: one bare Starlette route, served exactly as the apiserver is.

It answers every GET with the same fixed bytes (a file given on the command line), through the apiserver's
own `uvicorn_config`: the same TLS certificate and key, client-certificate verification against the same
CA, the same HTTP protocol class (which also extracts the peer certificate per connection), uvloop,
keep-alive, no access log. So the difference between it and the apiserver is everything the apiserver
does per request beyond HTTP and TLS: authentication, routing, the etcd read, decoding, encoding.
bench_get.py compares GETs against it; bench_up.py uses its start time and memory as a floor.

    python -m bench.baseline_server --port 8443 --cert apiserver.crt --key apiserver.key --client-ca ca.crt \
        --body pod.json
"""

from __future__ import annotations

import argparse
import ssl
import subprocess
import sys
import time
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

READY_TIMEOUT = 30.0


def build_app(body: bytes) -> Starlette:
    async def fixed(request: Request) -> Response:
        return Response(body, media_type="application/json")

    return Starlette(routes=[Route("/{path:path}", fixed)])


def start(port: int, cert: Path, key: Path, client_ca: Path, body_file: Path, log: Path) -> subprocess.Popen[bytes]:
    """Run the server as a child process (as the apiserver runs); returns once it answers."""
    argv = [sys.executable, "-m", "bench.baseline_server", f"--port={port}", f"--cert={cert}", f"--key={key}",
            f"--client-ca={client_ca}", f"--body={body_file}"]
    with open(log, "ab") as out:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    wait_ready(process, port, ready_context(client_ca))
    return process


def ready_context(client_ca: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(client_ca))


def wait_ready(process: subprocess.Popen[bytes], port: int, context: ssl.SSLContext) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while not probe_https("127.0.0.1", port, "/", context).ok:
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"baseline server on port {port} did not start")
        time.sleep(0.01)


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(10)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--client-ca", required=True)
    parser.add_argument("--body", type=Path, required=True)
    args = parser.parse_args(argv)
    options = ServerOptions(bind_address="127.0.0.1", secure_port=args.port, tls_cert_file=args.cert,
                            tls_private_key_file=args.key, client_ca_file=args.client_ca)
    app: Any = build_app(args.body.read_bytes())
    uvicorn.Server(uvicorn_config(options, app)).run()


if __name__ == "__main__":
    main()
