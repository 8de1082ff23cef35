"""neardup: find near-duplicate and copied text in news, fast.

The public API is what ``__all__`` lists; everything else is internal and may change.
Names are loaded on first use (PEP 562), so ``import neardup`` stays fast and pulls in the
compiled kernels, the store or the Dask engine only when they are used.

The API follows the data flow::

    text        tokenize, sentence_spans, TextConfig
    signatures  sign, Signature, <Scheme>Config, IdfTable, build_idf_table,
                estimate_jaccard, hamming_distance
    similarity  jaccard, containment, bottomk_jaccard, longest_common_substring,
                align_passages, AlignmentConfig, AlignedPassage
    indexes     HammingIndex, LSHIndex (+ configs)
    detectors   dedup_result_set (seed 000), NewsIndex (ingest / similar / events, seed 003),
                OriginDetector (seed 004), dedup (batch corpus dedup, local or Dask)
"""

from __future__ import annotations

import importlib
import os
import sys
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
    # records and errors
    "Article": "neardup.records",
    "AuthError": "neardup.errors",
    "CapacityError": "neardup.errors",
    "ConfigError": "neardup.errors",
    "ConflictError": "neardup.errors",
    "InputError": "neardup.errors",
    "InputTooLargeError": "neardup.errors",
    "InputTypeError": "neardup.errors",
    "NearDupError": "neardup.errors",
    "NotFoundError": "neardup.errors",
    "SchemeMismatchError": "neardup.errors",
    "SignatureFormatError": "neardup.errors",
    "StoreError": "neardup.errors",
    # text
    "TextConfig": "neardup.text",
    "sentence_spans": "neardup.text",
    "tokenize": "neardup.text",
    # signatures
    "IdfTable": "neardup.sketch",
    "MinHashConfig": "neardup.sketch",
    "SentenceSketchConfig": "neardup.sketch",
    "ShingleSetConfig": "neardup.sketch",
    "Signature": "neardup.sketch",
    "SimHashConfig": "neardup.sketch",
    "SpotSigsConfig": "neardup.sketch",
    "build_idf_table": "neardup.sketch",
    "estimate_jaccard": "neardup.sketch",
    "hamming_distance": "neardup.sketch",
    "sign": "neardup.sketch",
    # similarity
    "AlignedPassage": "neardup.similarity",
    "AlignmentConfig": "neardup.similarity",
    "CommonSubstring": "neardup.similarity",
    "align_passages": "neardup.similarity",
    "bottomk_jaccard": "neardup.similarity",
    "containment": "neardup.similarity",
    "jaccard": "neardup.similarity",
    "longest_common_substring": "neardup.similarity",
    # the judgement
    "RuleConfig": "neardup.rule",
    "Verdict": "neardup.rule",
    "judge": "neardup.rule",
    # indexes
    "HammingIndex": "neardup.index",
    "HammingIndexConfig": "neardup.index",
    "LSHIndex": "neardup.index",
    "LSHIndexConfig": "neardup.index",
    # detectors
    "ResultSetDeduper": "neardup.detect.resultset",
    "dedup_result_set": "neardup.detect.resultset",
    "Decision": "neardup.detect.stream",
    "Match": "neardup.detect.stream",
    "StreamConfig": "neardup.detect.stream",
    "EventConfig": "neardup.detect.story",
    "EventReport": "neardup.detect.story",
    "NewsIndex": "neardup.api",
    "OriginConfig": "neardup.detect.origin",
    "OriginDetector": "neardup.detect.origin",
    "OriginReport": "neardup.detect.origin",
    "Segment": "neardup.detect.origin",
    "DedupConfig": "neardup.batch",
    "dedup": "neardup.batch",
}

__all__ = [
    "AlignedPassage",
    "AlignmentConfig",
    "Article",
    "AuthError",
    "CapacityError",
    "CommonSubstring",
    "ConfigError",
    "ConflictError",
    "Decision",
    "DedupConfig",
    "EventConfig",
    "EventReport",
    "HammingIndex",
    "HammingIndexConfig",
    "IdfTable",
    "InputError",
    "InputTooLargeError",
    "InputTypeError",
    "LSHIndex",
    "LSHIndexConfig",
    "Match",
    "MinHashConfig",
    "NearDupError",
    "NewsIndex",
    "NotFoundError",
    "OriginConfig",
    "OriginDetector",
    "OriginReport",
    "ResultSetDeduper",
    "RuleConfig",
    "SchemeMismatchError",
    "Segment",
    "SentenceSketchConfig",
    "ShingleSetConfig",
    "Signature",
    "SignatureFormatError",
    "SimHashConfig",
    "SpotSigsConfig",
    "StoreError",
    "StreamConfig",
    "TextConfig",
    "Verdict",
    "__version__",
    "align_passages",
    "bottomk_jaccard",
    "build_idf_table",
    "containment",
    "dedup",
    "dedup_result_set",
    "estimate_jaccard",
    "hamming_distance",
    "jaccard",
    "judge",
    "longest_common_substring",
    "sentence_spans",
    "sign",
    "tokenize",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'neardup' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from neardup.api import NewsIndex
    from neardup.batch import DedupConfig, dedup
    from neardup.detect.origin import OriginConfig, OriginDetector, OriginReport, Segment
    from neardup.detect.resultset import ResultSetDeduper, dedup_result_set
    from neardup.detect.story import EventConfig, EventReport
    from neardup.detect.stream import Decision, Match, StreamConfig
    from neardup.errors import (
        AuthError,
        CapacityError,
        ConfigError,
        ConflictError,
        InputError,
        InputTooLargeError,
        InputTypeError,
        NearDupError,
        NotFoundError,
        SchemeMismatchError,
        SignatureFormatError,
        StoreError,
    )
    from neardup.index import HammingIndex, HammingIndexConfig, LSHIndex, LSHIndexConfig
    from neardup.records import Article
    from neardup.rule import RuleConfig, Verdict, judge
    from neardup.similarity import (
        AlignedPassage,
        AlignmentConfig,
        CommonSubstring,
        align_passages,
        bottomk_jaccard,
        containment,
        jaccard,
        longest_common_substring,
    )
    from neardup.sketch import (
        IdfTable,
        MinHashConfig,
        SentenceSketchConfig,
        ShingleSetConfig,
        Signature,
        SimHashConfig,
        SpotSigsConfig,
        build_idf_table,
        estimate_jaccard,
        hamming_distance,
        sign,
    )
    from neardup.text import TextConfig, sentence_spans, tokenize
