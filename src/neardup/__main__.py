"""The ``neardup`` command's entry point (also ``python -m neardup``).

It catches a Ctrl-C pressed while the command line interface is still loading (which would
otherwise end in a ``KeyboardInterrupt`` traceback) and one pressed as the finished command
returns, and hands everything in between to :func:`neardup.cli.main`: every interruption
ends with a message and exit 130.  Once the command has returned, the process only exits,
and a late Ctrl-C is ignored rather than turned into a death by signal during shutdown.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import Any

__all__ = ["main"]


def main(argv: list[str] | None = None) -> Any:
    """Run the ``neardup`` command (see :mod:`neardup.cli`)."""
    pressed: list[int] = []

    def early(signum: int, frame: FrameType | None) -> None:
        pressed.append(signum)

    # A Ctrl-C ignored when the command started (a background job of a script) stays so.
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, early)
    try:
        from neardup.cli import main as cli_main
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        sys.stderr.write("neardup: interrupted\n")
        sys.exit(130)
    try:
        return cli_main(argv)
    except KeyboardInterrupt:  # after the command's own handling, before returning here
        sys.stderr.write("neardup: interrupted\n")
        sys.exit(130)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


if __name__ == "__main__":
    sys.exit(main())
