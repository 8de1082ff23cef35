"""Detectors: realtime result-set dedup (seed 000), the news stream, events, origin.

Names are loaded on first use (PEP 562), so importing one detector module does not load the
others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["ResultSetDeduper", "dedup_result_set", "kept_of"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'neardup.detect' has no attribute {name!r}")
    return getattr(importlib.import_module("neardup.detect.resultset"), name)


if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from neardup.detect.resultset import ResultSetDeduper, dedup_result_set, kept_of
