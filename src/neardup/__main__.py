"""The ``neardup`` command's entry point (also ``python -m neardup``).

It only catches a Ctrl-C pressed while the command line interface is still loading (which
would otherwise end in a ``KeyboardInterrupt`` traceback), then hands over to
:func:`neardup.cli.main`: every interruption ends with a message and exit 130.
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

    previous = signal.signal(signal.SIGINT, early)
    try:
        from neardup.cli import main as cli_main
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        sys.stderr.write("neardup: interrupted\n")
        sys.exit(130)
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
