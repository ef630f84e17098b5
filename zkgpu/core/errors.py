"""How every zkgpu command reports an error: one line on stderr, exit status 2, no traceback.

:class:`CliError` is a command's error; :class:`OneLineErrors` makes click's usage errors one line. An unexpected
exception prints one line, exit 1 (``configure(debug=True)`` re-raises it)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

__all__ = ["sigterm_as_interrupt", "check_writable_under", "CliError", "OneLineErrors", "OneLineGroup", "OneLineCommand", "USAGE_EXIT", "check_new_outputs", "configure", "debug_enabled", "check_bool"]

USAGE_EXIT = 2
_DEBUG = False  # configure(debug=...)


class CliError(click.ClickException):
    """A bad option, missing device or existing output: ``Error: <message>`` on one line, exit 2."""

    exit_code = USAGE_EXIT


def check_writable_under(opt: str, target: Any, folder: Path) -> None:
    """Refuse ``target`` (option ``opt``) unless the nearest existing folder at or above ``folder`` is writable. Raises
    CliError: that nearest existing path is a file, or not writable."""
    anc = folder
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise CliError(f"{opt} {target}: {anc} is a file, not a folder (choose another path)")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise CliError(f"{opt} {target}: cannot write into {anc} (choose another path)")


def check_new_outputs(targets: dict[str, str | os.PathLike | None], command: str, same_hint: str = "give each output its own name") -> None:
    """Check output files before any work: non-empty names, none exists, no two the same, folders writable.

    Args:
        targets: option name (``--proof``) -> path, or None for an output not asked for.
        command: the command, for the message. same_hint: the fix named when two options name one file.
    Raises:
        CliError: the first failed check, naming the option and its value."""
    seen: dict[Path, str] = {}
    for opt, target in targets.items():
        if target is None:
            continue
        if not str(target).strip():  # Path("") is ".", which exists: name the empty value instead
            raise CliError(f"{opt} {str(target)!r}: give a file name")
        path = Path(target)
        if path.exists() or path.is_symlink():
            raise CliError(f"{opt} {target} exists: {command} never overwrites a file (choose another name)")
        check_writable_under(opt, target, path.absolute().parent)
        key = path.resolve()
        if key in seen:
            raise CliError(f"{opt} {target} is the same file as {seen[key]}: {same_hint}")
        seen[key] = f"{opt} {target}"


def _interrupt_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM raises KeyboardInterrupt (main thread only), so clean-up runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def configure(*, debug: bool) -> None:
    """``debug=True``: a command's unexpected exception is re-raised with its traceback. Raises TypeError: not a bool."""
    global _DEBUG
    _DEBUG = check_bool("errors.configure", "debug", debug)


def check_bool(where: str, name: str, value: object) -> bool:
    """``value`` when it is a bool. Raises TypeError: it is not (names ``where``, ``name`` and the value)."""
    if not isinstance(value, bool):
        raise TypeError(f"{where}: {name} must be a bool, got {value!r}")
    return value


def debug_enabled() -> bool:
    """Whether :func:`configure` turned debugging on (off by default)."""
    return _DEBUG


def _one_line(message: str) -> str:
    return " ".join(str(message).split())


class OneLineErrors:
    """Mixin for click commands: every error is one line on stderr (no usage block, no traceback)."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)  # type: ignore[misc]
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)  # type: ignore[misc]
        except click.UsageError as e:
            if type(e).__name__ == "NoArgsIsHelpError":  # a group called without a command: its help, as click prints it
                click.echo(e.format_message(), err=True)
            else:
                click.echo(f"Error: {_one_line(e.format_message())}", err=True)
            sys.exit(USAGE_EXIT)
        except click.ClickException as e:
            click.echo(f"Error: {_one_line(e.format_message())}", err=True)
            sys.exit(e.exit_code)
        except (click.Abort, KeyboardInterrupt):
            click.echo("Aborted.", err=True)
            sys.exit(130)
        except Exception as e:
            if debug_enabled():
                raise
            click.echo(f"Error: internal error {type(e).__name__}: {_one_line(str(e))} (ZKGPU_DEBUG=1 shows the traceback)", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


class OneLineGroup(OneLineErrors, click.Group):
    """A click group with :class:`OneLineErrors`."""


class OneLineCommand(OneLineErrors, click.Command):
    """A click command with :class:`OneLineErrors`."""
