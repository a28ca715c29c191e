"""The README's command blocks, run as a newcomer would run them (issue 26, "The README is
tested").

Every fenced ```bash block of README.md after the first one (commands 1 and 2, which
``.ci/run`` runs in a fresh virtualenv) is one of two kinds:

* **runnable** (the default): every command runs, in README order, in one fresh working
  directory against the sim world -- ``vidmem`` from this Python environment, offline
  (``HF_HUB_OFFLINE=1``), with a cache folder of its own -- and must exit 0;
* **syntax-only**: the block needs what CI has not (weights, a GPU, a server, the user's
  own data or generator) and says so with the line ``<!-- readme-test: syntax-only -->``
  right before its fence (an HTML comment: invisible on GitHub). Each ``vidmem`` command
  of it is parsed by the real command line -- subcommand, benchmark name, every option
  name, option types and choices, required options -- without running; every other
  command is checked with ``bash -n``.

So a README command with a misspelt flag, a removed option or a failing sim example fails
this test, naming its README line.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
import typer.main

from vidmem.errors import VidmemError

README = Path(__file__).resolve().parents[1] / "README.md"
SYNTAX_ONLY = "<!-- readme-test: syntax-only -->"
#: Shell operators that end one simple command and start the next.
_OPERATORS = {"&&", "||", ";", "|", "&"}


@dataclass(frozen=True)
class Command:
    line: int  # README line the command starts on
    text: str  # the command as written, continuations joined, comment dropped
    argv: tuple[str, ...]  # shell words, as bash would split them (no expansion)


@dataclass(frozen=True)
class Block:
    line: int  # README line of the opening fence
    syntax_only: bool
    commands: tuple[Command, ...]


def shell_words(text: str) -> list[str]:
    """Split one command line the way the shell does: quotes, comments, ``&&`` apart.

    >>> shell_words('vidmem run x --opt t="a {b} c"  # note')
    ['vidmem', 'run', 'x', '--opt', 't=a {b} c']
    >>> shell_words("pip install . && vidmem demo")
    ['pip', 'install', '.', '&&', 'vidmem', 'demo']
    """
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return list(lexer)


def split_commands(body: list[str], first_line: int) -> tuple[Command, ...]:
    """The commands of a block: backslash continuations joined, comment lines dropped."""
    commands: list[Command] = []
    pending: list[str] = []
    start = first_line
    for offset, raw in enumerate(body):
        if not pending:
            start = first_line + offset
        if raw.rstrip().endswith("\\"):
            pending.append(raw.rstrip()[:-1])
            continue
        text = " ".join(part.strip() for part in [*pending, raw])
        pending = []
        argv = shell_words(text)
        if argv:  # a blank or comment-only line is no command
            commands.append(Command(start, text.strip(), tuple(argv)))
    assert not pending, f"README line {start}: a block ends inside a backslash continuation"
    return tuple(commands)


def readme_blocks(text: str) -> list[Block]:
    """Every ```bash block of the README, in order, with its marker."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```bash":
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        previous = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        blocks.append(Block(line=i + 1, syntax_only=previous == SYNTAX_ONLY,
                            commands=split_commands(lines[i + 1:end], first_line=i + 2)))
        i = end + 1
    return blocks


def blocks_to_test() -> list[Block]:
    """The README's blocks after the first (commands 1 and 2 are .ci/run's)."""
    return readme_blocks(README.read_text(encoding="utf-8"))[1:]


def simple_commands(argv: tuple[str, ...]) -> list[list[str]]:
    """``a && b | c`` -> ``[[a], [b], [c]]``."""
    parts: list[list[str]] = [[]]
    for word in argv:
        if word in _OPERATORS:
            parts.append([])
        else:
            parts[-1].append(word)
    return [p for p in parts if p]


# ------------------------------------------------------------------ parsing without running


def check_vidmem_args(args: list[str]) -> None:
    """Parse ``vidmem ARGS`` with the real command line, running nothing.

    Each group and command builds its click context (``make_context``: option names,
    types, choices, required options, benchmark names through the benchmark group) and
    hands the rest to its subcommand; no command callback is invoked.

    Typer (0.29) carries its own copy of click, so groups are found by what they do
    (``resolve_command``) and refusals by typer's public base class.

    Raises:
        typer.TyperException: a usage error (no such option, bad value, missing option).
        VidmemError: an unknown benchmark name, as the benchmark groups report it.
    """
    from vidmem.cli import app

    command = typer.main.get_command(app)
    name, parent = "vidmem", None
    while True:
        ctx = command.make_context(name, list(args), parent=parent, resilient_parsing=False)
        if not hasattr(command, "resolve_command"):  # a command, not a group
            return
        rest = [*ctx._protected_args, *ctx.args]
        if not rest:
            return
        name, sub, args = command.resolve_command(ctx, rest)
        assert sub is not None, f"vidmem: no command {name!r}"
        command, parent = sub, ctx


def check_syntax_only(cmd: Command) -> None:
    bash = subprocess.run(["bash", "-n", "-c", cmd.text], capture_output=True, text=True)
    assert bash.returncode == 0, f"README line {cmd.line}: bash -n: {bash.stderr}\n{cmd.text}"
    for words in simple_commands(cmd.argv):
        if words[0] != "vidmem":
            continue
        try:
            check_vidmem_args(words[1:])
        except typer.Exit as done:  # --version / --help style eager options
            assert done.exit_code == 0, f"README line {cmd.line}: {cmd.text}"
        except typer.TyperException as refused:
            pytest.fail(f"README line {cmd.line}: vidmem refuses the command line: "
                        f"{refused.format_message()}\n{cmd.text}")
        except VidmemError as refused:  # e.g. an unknown benchmark name
            pytest.fail(f"README line {cmd.line}: vidmem refuses the command line: "
                        f"{refused}\n{cmd.text}")


def test_marker_only_before_a_bash_fence():
    lines = README.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if line.strip() == SYNTAX_ONLY:
            following = next((x.strip() for x in lines[number:] if x.strip()), "")
            assert following == "```bash", f"README line {number}: marker not before a ```bash fence"


def test_blocks_found():
    blocks = blocks_to_test()
    assert len(blocks) >= 10, [b.line for b in blocks]
    assert any(not b.syntax_only for b in blocks), "no README block runs on the sim world"
    assert all(b.commands for b in blocks), [b.line for b in blocks if not b.commands]


@pytest.mark.parametrize("args, refusal", [
    (["run", "cmbench", "--root", "x", "--out", "y", "--no-such-flag"], "No such option"),
    (["score", "no_such_bench"], "no_such_bench"),
    (["sim", "build", "cmbench", "--out", "x", "--seed", "not-a-number"], "--seed"),
    (["sim", "build", "cmbench"], "--out"),  # a required option left out
])
def test_checker_refuses_bad_command_lines(args, refusal):
    """The syntax check can fail: a bad flag, benchmark, value or missing option."""
    with pytest.raises((typer.TyperException, VidmemError)) as refused:
        check_vidmem_args(args)
    error = refused.value
    message = error.format_message() if hasattr(error, "format_message") else str(error)
    assert refusal in message


def test_every_block_parses():
    """Every block -- runnable or not -- passes the syntax-and-flags check (fast)."""
    for block in blocks_to_test():
        for cmd in block.commands:
            check_syntax_only(cmd)


# ----------------------------------------------------------------------- running on the sim


def _run(cmd: Command, cwd: Path, env: dict[str, str]) -> None:
    words = list(cmd.argv)
    if words[0] == "export":  # the next commands of the walk-through see it
        for assignment in words[1:]:
            key, _, value = assignment.partition("=")
            env[key] = value
        return
    shell = any(w in _OPERATORS for w in words)
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", cmd.text] if shell else words, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - started
    print(f"README line {cmd.line} ({seconds:.0f} s, exit {done.returncode}): {cmd.text}")
    assert done.returncode == 0, (
        f"README line {cmd.line} failed (exit {done.returncode}): {cmd.text}\n"
        f"--- stdout (tail)\n{done.stdout[-3000:]}\n--- stderr (tail)\n{done.stderr[-3000:]}")


@pytest.mark.slow
def test_runnable_blocks_run_on_the_sim(tmp_path):
    """The unmarked blocks, in README order, in one fresh folder, each command exit 0."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIDMEM_")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MPLBACKEND="Agg",
               VIDMEM_CACHE_DIR=str(tmp_path / "user-cache"),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
    work = tmp_path / "work"
    work.mkdir()
    ran = 0
    for block in blocks_to_test():
        if block.syntax_only:
            continue
        for cmd in block.commands:
            _run(cmd, work, env)
            ran += 1
    assert ran, "no README command ran"
