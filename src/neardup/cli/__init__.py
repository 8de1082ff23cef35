"""The ``neardup`` command line.

Each command lives in its own module of this package and is loaded only when it is run, so
``neardup --help`` stays fast.  What every command does the same way (options, exit codes,
Ctrl-C) is in :mod:`neardup.cli.common`.  Errors map to exit codes: a
:class:`~neardup.errors.NearDupError` exits with its ``exit_code`` and a one-line message on
stderr (no traceback); usage errors exit 2 (click's convention); an interrupted run exits 130.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

# neardup works in parallel by processes; OpenBLAS's thread pool (started when numpy is
# imported) would only add start-up CPU and oversubscribe the cores the workers use.  A
# value the user set wins.  Set before any command imports numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click

from neardup import __version__
from neardup.errors import NearDupError

__all__ = ["cli", "main"]

# command name -> "module:attribute", loaded lazily.  One line per command.
COMMANDS: dict[str, str] = {
    "demo": "neardup.cli.demo:demo",
    "ingest": "neardup.cli.ingest:ingest",
    "eval": "neardup.cli.eval:eval_group",
    "synth": "neardup.cli.eval:synth",
    "serve": "neardup.cli.serve:serve",
    "dedup": "neardup.cli.dedup:dedup_command",
    "pairs": "neardup.cli.dedup:pairs_command",
    "origin": "neardup.cli.origin:origin",
    "align": "neardup.cli.align:align",
}


class LazyGroup(click.Group):
    """A click group whose commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command: click.Command = getattr(importlib.import_module(module_name), attr)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="neardup")
def cli() -> None:
    """neardup: find near-duplicate and copied text in news, fast.

    \b
    Every command that reads articles takes --on-error stop|skip (stop by default),
    replaces an existing output only with --force, draws progress bars only on a
    terminal, and ends with a summary on stderr.  Exit codes: 0 done, 2 usage error,
    65 bad input data, 66 missing input, 74 store or file I/O error, 77 wrong API
    token, 130 interrupted.  docs/cli.md has the details.
    """


def main(argv: list[str] | None = None) -> Any:
    """Console entry point: run the CLI and map neardup errors to exit codes."""
    try:
        return cli.main(args=argv, prog_name="neardup", standalone_mode=False)
    except NearDupError as exc:
        click.echo(f"neardup: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("neardup: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("neardup: interrupted", err=True)
        sys.exit(130)
    except SystemError as exc:
        # Ctrl-C inside a compiled call of a command without safe points: the compiled
        # dispatcher reports the KeyboardInterrupt it was handed as a SystemError.
        if not _caused_by_interrupt(exc):
            raise
        click.echo("neardup: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)


def _caused_by_interrupt(exc: BaseException | None) -> bool:
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False
