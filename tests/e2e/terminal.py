"""A command under a pseudo-terminal, as when a user types `kubectl exec -it` or `kubectl attach -it` in a
terminal window: kubectl sees a tty of a chosen size, so it switches to raw mode and sends that size on.

    with Terminal(argv, env, rows=33, cols=111) as terminal:
        terminal.expect("# ")                 wait until the output so far contains this (a prompt)
        terminal.type("stty size; exit 7\\r")
        code = terminal.wait()                the exit code, once the command has ended
    terminal.output                           everything it printed, as text

`run_in_terminal` runs a command that needs no typing to its end and returns what it printed.

Usage rules: every wait is bounded and fails naming what was awaited and what was printed; leaving the block
kills the command if it still runs.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import time
from collections.abc import Mapping, Sequence

TIMEOUT = 20.0  # seconds


class Terminal:
    def __init__(self, argv: Sequence[str], env: Mapping[str, str], rows: int, cols: int) -> None:
        self.argv = list(argv)
        self._master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.process = subprocess.Popen(self.argv, stdin=slave, stdout=slave, stderr=slave, env=dict(env),
                                        start_new_session=True)
        os.close(slave)
        self._output = b""
        self._closed = False  # the command closed its side of the terminal

    @property
    def output(self) -> str:
        return self._output.decode(errors="replace")

    def _read(self, block_for: float) -> None:
        """Read what the command printed within `block_for` seconds (the terminal's end is noted)."""
        if self._closed:
            time.sleep(block_for)
            return
        ready, _, _ = select.select([self._master], [], [], block_for)
        if not ready:
            return
        try:
            data = os.read(self._master, 4096)
        except OSError:  # EIO: the command closed the terminal
            data = b""
        self._output += data
        self._closed = not data

    def expect(self, text: str, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output:
            if time.monotonic() > deadline or (self._closed and self.process.poll() is not None):
                raise AssertionError(f"`{' '.join(self.argv)}` did not print {text!r} within {timeout:.0f}s; "
                                     f"it printed:\n{self.output}")
            self._read(0.1)

    def type(self, text: str) -> None:
        os.write(self._master, text.encode())

    def wait(self, timeout: float = TIMEOUT) -> int:
        """Read everything until the command has ended and closed the terminal; its exit code."""
        deadline = time.monotonic() + timeout
        while not self._closed or self.process.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"`{' '.join(self.argv)}` still runs after {timeout:.0f}s; "
                                     f"it printed:\n{self.output}")
            self._read(0.1)
        return self.process.returncode

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(5)
        os.close(self._master)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_in_terminal(argv: Sequence[str], env: Mapping[str, str], rows: int, cols: int,
                    timeout: float = TIMEOUT) -> str:
    """Run `argv` to its end with a terminal of rows x cols as stdin, stdout and stderr; what it printed."""
    with Terminal(argv, env, rows, cols) as terminal:
        terminal.wait(timeout)
    return terminal.output
