"""neardup: find near-duplicate and copied text in news, fast.

The public API is what ``__all__`` lists: one entry point per job, the records they return,
their configurations and the root of the errors.  Everything else is reachable from its
module (``neardup.errors``, ``neardup.sketch``, ``neardup.similarity``, ``neardup.index``,
...), internal unless that module's ``__all__`` lists it.  Names are loaded on first use
(PEP 562), so ``import neardup`` stays fast and pulls in the compiled kernels, the store or
the Dask engine only when they are used.

The jobs::

    sign              text -> Signature (default scheme "coverage": the rule's sketch)
    dedup_result_set  ranked signatures -> which items to keep (seed 000)
    judge             two texts -> Verdict: duplicate / partial / related / unrelated
    NewsIndex         ingest -> Decision, similar -> Match, events, event -> EventReport
                      (seed 003)
    OriginDetector    documents in time order -> OriginReport, in fixed memory (seed 004)
    align_passages    source, article -> AlignedPassage spans, even reworded
    dedup             a corpus -> its duplicate clusters (batch, local or Dask)

Names removed from the top level keep working for one release with a ``DeprecationWarning``
that names their module (README.md, "The public API").
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"


def _compiled_cache_fallback() -> None:
    """Give numba a writable cache folder when it would find none.

    numba keeps the compiled kernels next to the package's source, else in the user's cache
    folder (``~/.cache/numba``); when neither can be written (a read-only installation run by
    an account without a home, as services often are) it refuses to load any kernel.  Then,
    and only then, the kernels are cached in the temporary folder.
    """
    if "NUMBA_CACHE_DIR" in os.environ or "numba" in sys.modules:
        return
    if os.access(os.path.dirname(__file__), os.W_OK):
        return
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    probe = cache
    while probe and not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)  # the nearest folder that exists must let us create it
    if os.access(probe, os.W_OK | os.X_OK):
        return
    import tempfile

    folder = os.path.join(tempfile.gettempdir(), f"neardup-numba-cache-{os.getuid()}")
    os.environ["NUMBA_CACHE_DIR"] = folder


_compiled_cache_fallback()

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # the jobs
    "sign": "neardup.rule.coverage",  # neardup.sketch.sign, with its default scheme registered
    "dedup_result_set": "neardup.detect.resultset",
    "judge": "neardup.rule",
    "NewsIndex": "neardup.api",
    "OriginDetector": "neardup.detect.origin",
    "align_passages": "neardup.similarity",
    "dedup": "neardup.batch",
    # records
    "Article": "neardup.records",
    "Signature": "neardup.sketch",
    "Verdict": "neardup.rule",
    "Decision": "neardup.detect.stream",
    "Match": "neardup.detect.stream",
    "Event": "neardup.api",
    "EventReport": "neardup.detect.story",
    "OriginReport": "neardup.detect.origin",
    "AlignedPassage": "neardup.similarity",
    # configurations
    "RuleConfig": "neardup.rule",
    "StreamConfig": "neardup.detect.stream",
    "EventConfig": "neardup.detect.story",
    "OriginConfig": "neardup.detect.origin",
    "AlignmentConfig": "neardup.similarity",
    "DedupConfig": "neardup.batch",
    # errors (the whole tree: neardup.errors)
    "NearDupError": "neardup.errors",
    "ConfigError": "neardup.errors",
    "InputError": "neardup.errors",
    "NotFoundError": "neardup.errors",
}

# Names that were public here before; one release with a DeprecationWarning, then removed.
_MOVED: dict[str, str] = {
    **dict.fromkeys(
        (
            "AuthError",
            "CapacityError",
            "ConflictError",
            "InputTooLargeError",
            "InputTypeError",
            "SchemeMismatchError",
            "SignatureFormatError",
            "StoreError",
        ),
        "neardup.errors",
    ),
    **dict.fromkeys(("TextConfig", "sentence_spans", "tokenize"), "neardup.text"),
    **dict.fromkeys(
        (
            "IdfTable",
            "MinHashConfig",
            "SentenceSketchConfig",
            "ShingleSetConfig",
            "SimHashConfig",
            "SpotSigsConfig",
            "build_idf_table",
            "estimate_jaccard",
            "hamming_distance",
        ),
        "neardup.sketch",
    ),
    "CoverageSketchConfig": "neardup.rule.coverage",
    **dict.fromkeys(
        (
            "CommonSubstring",
            "bottomk_jaccard",
            "containment",
            "jaccard",
            "longest_common_substring",
        ),
        "neardup.similarity",
    ),
    **dict.fromkeys(
        ("HammingIndex", "HammingIndexConfig", "LSHIndex", "LSHIndexConfig"), "neardup.index"
    ),
    "ResultSetDeduper": "neardup.detect.resultset",
    "Segment": "neardup.detect.origin",
}

# Submodules reachable as attributes after a bare ``import neardup``.
_SUBMODULES = frozenset({"errors"})

__all__ = [
    "AlignedPassage",
    "AlignmentConfig",
    "Article",
    "ConfigError",
    "Decision",
    "DedupConfig",
    "Event",
    "EventConfig",
    "EventReport",
    "InputError",
    "Match",
    "NearDupError",
    "NewsIndex",
    "NotFoundError",
    "OriginConfig",
    "OriginDetector",
    "OriginReport",
    "RuleConfig",
    "Signature",
    "StreamConfig",
    "Verdict",
    "__version__",
    "align_passages",
    "dedup",
    "dedup_result_set",
    "judge",
    "sign",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    moved = _MOVED.get(name)
    if moved is not None:  # not cached: every use warns
        # ``from neardup import x`` probes with hasattr() inside the import machinery first;
        # only the caller's own look-up warns, so the warning names the caller's line once.
        if not sys._getframe(1).f_code.co_filename.startswith("<frozen importlib"):
            warnings.warn(
                f"neardup.{name} is deprecated and will be removed in the next release;"
                f" use `from {moved} import {name}`",
                DeprecationWarning,
                stacklevel=2,
            )
        return getattr(importlib.import_module(moved), name)
    if name in _SUBMODULES:
        return importlib.import_module(f"neardup.{name}")
    raise AttributeError(f"module 'neardup' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from neardup.api import NewsIndex
    from neardup.batch import DedupConfig, dedup
    from neardup.detect.origin import OriginConfig, OriginDetector, OriginReport
    from neardup.detect.resultset import dedup_result_set
    from neardup.detect.story import EventConfig, EventReport
    from neardup.detect.stream import Decision, Match, StreamConfig
    from neardup.errors import ConfigError, InputError, NearDupError, NotFoundError
    from neardup.records import Article
    from neardup.rule import RuleConfig, Verdict, judge
    from neardup.rule.coverage import sign
    from neardup.similarity import AlignedPassage, AlignmentConfig, align_passages
    from neardup.sketch import Signature
