"""Finding the etcd binaries and building etcd's command line (no process is started here)."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from minikube_py.store.etcd import grpc_target, prefix_end
from minikube_py.store.etcd_server import etcd_argv, etcd_binary, etcdctl_binary


@pytest.mark.parametrize("find", [etcd_binary, etcdctl_binary], ids=["etcd", "etcdctl"])
def test_the_binaries_are_found_and_executable(find: Callable[[], str]) -> None:
    assert os.access(find(), os.X_OK)


@pytest.mark.parametrize(("fast", "unsafe_no_fsync", "present", "absent"), [
    (True, True, ["--heartbeat-interval", "--election-timeout", "--unsafe-no-fsync"], []),
    (False, False, [], ["--heartbeat-interval", "--election-timeout", "--unsafe-no-fsync"]),
], ids=["test flags trade safety for speed", "production flags keep etcd's defaults"])
def test_etcd_argv_flags(fast: bool, unsafe_no_fsync: bool, present: list[str], absent: list[str]) -> None:
    argv = etcd_argv("m", "/data", 2379, 2380, fast=fast, unsafe_no_fsync=unsafe_no_fsync)

    assert all(flag in argv for flag in present) and not any(flag in argv for flag in absent)
    assert argv[argv.index("--initial-cluster") + 1] == "m=http://127.0.0.1:2380"
    assert argv[argv.index("--experimental-watch-progress-notify-interval") + 1] == "5s"


@pytest.mark.parametrize(("prefix", "end"), [
    (b"/registry/pods/", b"/registry/pods0"),
    (b"a\xff", b"b"),
    (b"\xff\xff", b"\0"),
], ids=["a directory ends after its slash", "trailing 0xff bytes carry over", "all 0xff means the whole keyspace"])
def test_prefix_end(prefix: bytes, end: bytes) -> None:
    assert prefix_end(prefix) == end


async def test_grpc_target_lists_every_member_by_ip_address() -> None:
    target = await grpc_target(["http://localhost:2379", "127.0.0.2:22379"])

    assert target == "ipv4:127.0.0.1:2379,127.0.0.2:22379"


async def test_grpc_target_refuses_tls_endpoints() -> None:
    with pytest.raises(ValueError, match="no TLS"):
        await grpc_target(["https://127.0.0.1:2379"])
