"""Every lab in docs/labs runs: its ```console commands, in order, against a fresh cluster.

A lab is a tutorial, and a tutorial whose commands have stopped working is worse than none. This module
reads each `docs/labs/NN-*.md`, takes the commands of its ```console blocks (`$ ` lines, with `\\`
continuations and here-documents), and runs them one after another as if typed into one shell, with
`MKPY_HOME`, `HOME` and `KUBECONFIG` pointing into a temporary directory. The conventions (which blocks
run, `# expect: fail`, `# expect: "text"`, background commands ending in `&`) are documented for lab
authors in docs/labs/README.md; the parser here is their definition.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.conftest import Background, Result, isolated_env, run

pytestmark = pytest.mark.e2e

LABS_DIR = Path(__file__).resolve().parents[2] / "docs" / "labs"
LAB_FILES = sorted(LABS_DIR.glob("[0-9][0-9]-*.md"))
COMMAND_TIMEOUT = 60.0  # seconds a foreground command may take
BACKGROUND_READY = 2.0  # seconds to wait for a background command's first line before going on
BACKGROUND_EXPECT = 15.0  # seconds a background command has to print what its `# expect:` names
_EXPECT = re.compile(r"(?:^|\s)#\s*expect:(.*)$")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_HIDDEN_VARIABLES = {"_", "SHLVL", "OLDPWD"}


# reading a lab -----------------------------------------------------------------------------------------


@dataclass
class Command:
    """One `$ ` command of a lab, with what the lab expects of it."""

    text: str  # what bash runs (without a trailing `&`)
    line: int  # where it starts in the lab file, for error messages
    background: bool = False
    expect_failure: bool = False
    expect_texts: list[str] = field(default_factory=list)


@dataclass
class Block:
    line: int
    commands: list[Command]


def parse_lab(markdown: str) -> list[Block]:
    """The ```console blocks of a lab, each with its commands."""
    blocks, lines, i = [], markdown.splitlines(), 0
    while i < len(lines):
        if re.match(r"^```console\b", lines[i]):
            start, i = i, i + 1
            body: list[tuple[int, str]] = []
            while i < len(lines) and not lines[i].startswith("```"):
                body.append((i + 1, lines[i]))
                i += 1
            blocks.append(Block(start + 1, _commands(body)))
        i += 1
    return blocks


def _commands(body: list[tuple[int, str]]) -> list[Command]:
    commands, i = [], 0
    while i < len(body):
        number, line = body[i]
        if not line.startswith("$ "):
            i += 1  # sample output
            continue
        shell_lines = [line[2:]]
        while shell_lines[-1].endswith("\\") and i + 1 < len(body):
            i += 1
            shell_lines.append(body[i][1].removeprefix("> "))
        heredoc_lines = []
        for match in _HEREDOC.finditer(shell_lines[0]):
            terminator = match.group(2)
            while i + 1 < len(body):
                i += 1
                heredoc_lines.append(body[i][1])
                if body[i][1].strip() == terminator:
                    break
        commands.append(_command(shell_lines, heredoc_lines, number))
        i += 1
    return commands


def _command(shell_lines: list[str], heredoc_lines: list[str], number: int) -> Command:
    command = Command(text="", line=number)
    for line in shell_lines:
        match = _EXPECT.search(line)
        if match:
            spec = match.group(1)
            command.expect_texts += re.findall(r'"([^"]*)"', spec)
            command.expect_failure = "fail" in re.sub(r'"[^"]*"', "", spec).split()
    last = re.sub(r"(?:^|\s)#.*$", "", shell_lines[-1]).rstrip()
    if last.endswith("&") and not last.endswith("&&"):
        command.background = True
        shell_lines = [*shell_lines[:-1], last[:-1].rstrip()]
    command.text = "\n".join(shell_lines + heredoc_lines)
    return command


# running a lab -----------------------------------------------------------------------------------------


class LabShell:
    """Runs lab commands as if typed into one bash session: variables and the directory carry over."""

    def __init__(self, root: Path, lab: Path) -> None:
        self.lab = lab
        self.env = isolated_env(root)
        self.env["KUBECONFIG"] = str(Path(self.env["MKPY_HOME"]) / "mkpy" / "kubeconfig")
        self.cwd = root / "work"
        self.cwd.mkdir()
        self._state = root / "shell-state"
        self.background: list[tuple[Command, Background]] = []

    def where(self, command: Command) -> str:
        return f"{self.lab.name}:{command.line}"

    def run(self, command: Command) -> None:
        if command.background:
            self._start_background(command)
            return
        script = (f"set -a\ncd {shlex.quote(str(self.cwd))} || exit 99\n{command.text}\n"
                  f"__lab_status=$?\nenv -0 > {shlex.quote(str(self._state))}\nexit $__lab_status\n")
        self._state.unlink(missing_ok=True)
        result = run(["/bin/bash", "-c", script], env=self.env, cwd=self.cwd, check=False,
                     timeout=COMMAND_TIMEOUT)
        result = Result([command.text], result.returncode, result.stdout, result.stderr)
        self._keep_state()
        self._check(command, result)

    def _keep_state(self) -> None:
        if not self._state.exists():
            return
        env = {}
        for entry in self._state.read_bytes().decode(errors="replace").split("\0"):
            name, sep, value = entry.partition("=")
            if sep and name not in _HIDDEN_VARIABLES and not name.startswith("__lab"):
                env[name] = value
        self.env = env
        self.cwd = Path(env.get("PWD", str(self.cwd)))

    def _check(self, command: Command, result: Result) -> None:
        if command.expect_failure and result.returncode == 0:
            pytest.fail(f"{self.where(command)}: expected this command to fail:\n{result.describe()}")
        if not command.expect_failure and result.returncode != 0:
            pytest.fail(f"{self.where(command)}: command failed:\n{result.describe()}")
        missing = [text for text in command.expect_texts if text not in result.output]
        if missing:
            pytest.fail(f"{self.where(command)}: output lacks {missing}:\n{result.describe()}")

    def _start_background(self, command: Command) -> None:
        job = Background(["/bin/bash", "-c", f"set -a\n{command.text}"], env=self.env, cwd=self.cwd)
        self.background.append((command, job))
        try:
            job.wait_for(lambda lines: bool(lines), "its first line", timeout=BACKGROUND_READY)
        except AssertionError:
            if job.process.poll() not in (None, 0):
                pytest.fail(f"{self.where(command)}: background command exited with code "
                            f"{job.process.returncode}:\n{job.stop()}")

    def finish_block(self) -> None:
        """Wait for what each background command should print, then stop them all."""
        try:
            for command, job in self.background:
                for text in command.expect_texts:
                    try:
                        job.wait_for(text, timeout=BACKGROUND_EXPECT)
                    except AssertionError as err:
                        pytest.fail(f"{self.where(command)}: background command `{command.text}`: {err}")
        finally:
            self.stop_background()

    def stop_background(self) -> None:
        for _, job in self.background:
            job.stop()
        self.background = []

    def delete_clusters(self) -> None:
        home = Path(self.env["MKPY_HOME"])
        for cluster_dir in sorted(home.iterdir()) if home.is_dir() else []:
            if (cluster_dir / "cluster.json").exists():
                run([sys.executable, "-m", "minikube_py.cli.main", "delete", "--name", cluster_dir.name],
                    env=self.env, check=False)


@pytest.fixture()
def shell(request: pytest.FixtureRequest, tmp_path: Path, kubectl_on_path: str) -> Iterator[LabShell]:
    lab_shell = LabShell(tmp_path, request.param)
    try:
        yield lab_shell
    finally:
        lab_shell.stop_background()
        lab_shell.delete_clusters()


@pytest.mark.parametrize("shell", LAB_FILES, ids=[lab.stem for lab in LAB_FILES], indirect=True)
def test_every_command_of_the_lab_works(shell: LabShell) -> None:
    blocks = parse_lab(shell.lab.read_text())
    assert blocks, f"{shell.lab.name} has no ```console blocks to run"
    for block in blocks:
        for command in block.commands:
            shell.run(command)
        shell.finish_block()


def test_there_is_at_least_one_lab() -> None:
    assert LAB_FILES, f"no labs found in {LABS_DIR}"


# the parser itself (no cluster needed) --------------------------------------------------------------------


SAMPLE = '''
Some prose.

```console
$ mkpy up
Starting cluster "mkpy"
$ kubectl get pod nope       # expect: fail "NotFound"
Error from server (NotFound): pods "nope" not found
$ cat > cm.yaml <<'EOF'
apiVersion: v1
$ not a command: inside the here-document
EOF
$ kubectl get configmaps \\
>   --watch &   # expect: "MODIFIED" "DELETED"
```

```text
$ never run
```
'''


def test_the_parser_reads_commands_markers_heredocs_and_continuations() -> None:
    blocks = parse_lab(SAMPLE)
    assert len(blocks) == 1
    up, missing, heredoc, watch = blocks[0].commands
    assert (up.text, up.expect_failure, up.expect_texts, up.background) == ("mkpy up", False, [], False)
    assert missing.expect_failure and missing.expect_texts == ["NotFound"]
    assert heredoc.text.splitlines()[-1] == "EOF" and "$ not a command" in heredoc.text
    assert watch.background and watch.expect_texts == ["MODIFIED", "DELETED"]
    assert watch.text == "kubectl get configmaps \\\n  --watch"
    assert [c.line for c in blocks[0].commands] == [5, 7, 9, 13]


def test_a_double_ampersand_is_not_a_background_command() -> None:
    (block,) = parse_lab("```console\n$ true && echo ok   # expect: \"ok\"\n```\n")
    assert not block.commands[0].background and block.commands[0].expect_texts == ["ok"]


def test_the_lab_shell_carries_variables_and_directory_between_commands(tmp_path: Path) -> None:
    lab_shell = LabShell(tmp_path, Path("sample.md"))
    for text in ("mkdir sub && cd sub", "GREETING=hello", 'test "$GREETING" = hello && test "$(basename "$PWD")" = sub'):
        lab_shell.run(Command(text=text, line=1))
    with pytest.raises(pytest.fail.Exception, match="expected this command to fail"):
        lab_shell.run(Command(text="true", line=2, expect_failure=True))
    with pytest.raises(pytest.fail.Exception, match="output lacks"):
        lab_shell.run(Command(text="echo hi", line=3, expect_texts=["bye"]))
