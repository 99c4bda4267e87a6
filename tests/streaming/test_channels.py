"""The WebSocket channel protocol: framing, exit-code Statuses, terminal sizes, stream options."""

from __future__ import annotations

import json

import pytest

from minikube_py.streaming import channels
from minikube_py.streaming.remotecommand import StreamOptions


def test_a_message_is_the_channel_byte_then_the_payload() -> None:
    assert channels.encode(channels.STDOUT, b"hi") == b"\x01hi"
    assert channels.decode(b"\xff\x00") == (channels.CLOSE, b"\x00")
    with pytest.raises(ValueError, match="no channel byte"):
        channels.decode(b"")


def test_exit_codes_travel_as_kubectl_reads_them() -> None:
    failure = channels.exit_code_status(3)
    assert failure["reason"] == "NonZeroExitCode"
    assert failure["message"] == "command terminated with non-zero exit code: exit status 3"
    assert failure["details"] == {"causes": [{"reason": "ExitCode", "message": "3"}]}
    assert channels.exit_code(json.loads(channels.status_bytes(failure))) == 3
    assert channels.exit_code_status(0) == {"metadata": {}, "status": "Success"}
    assert channels.exit_code(channels.success_status()) == 0
    assert channels.exit_code(channels.failure_status("runtime gone")) is None


def test_resize_events_split_from_a_stream_with_the_rest_kept() -> None:
    sizes, rest = channels.parse_sizes(b'{"Width":100,"Height":30}\n{"Width":80,"Hei')
    assert sizes == [channels.TerminalSize(100, 30)]
    assert rest == b'\n{"Width":80,"Hei'
    sizes, rest = channels.parse_sizes(rest + b'ght":24}')
    assert sizes == [channels.TerminalSize(80, 24)] and rest == b""


def test_a_malformed_resize_event_is_an_error() -> None:
    with pytest.raises(ValueError, match="malformed resize"):
        channels.parse_sizes(b"[1,2}")


def test_negotiation_takes_the_clients_first_supported_protocol() -> None:
    assert channels.negotiate([channels.V5, channels.V4], [channels.V4, channels.V5]) == channels.V5
    assert channels.negotiate(["base64.channel.k8s.io"], [channels.V4]) is None


@pytest.mark.parametrize("query, expected", [
    ({"stdout": "true", "stderr": "true"}, StreamOptions(False, True, True, False)),
    ({"stdin": "1", "stdout": "true", "stderr": "true", "tty": "true"}, StreamOptions(True, True, False, True)),
    ({"stdin": "true"}, StreamOptions(True, False, False, False)),
])
def test_stream_options_from_kube_query_parameters(query: dict[str, str], expected: StreamOptions) -> None:
    assert StreamOptions.from_query(query) == expected


def test_a_command_without_any_stream_is_refused_with_kubes_message() -> None:
    with pytest.raises(ValueError, match="you must specify at least 1 of stdin, stdout, stderr"):
        StreamOptions.from_query({"tty": "true"})


def test_channels_of_a_command_error_first() -> None:
    assert StreamOptions(True, True, False, True).channels() == [channels.ERROR, channels.STDIN, channels.STDOUT,
                                                                 channels.RESIZE]
