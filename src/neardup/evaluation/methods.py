"""One way to score a pair of texts with every method, for evaluation side by side.

Each :class:`Method` turns a text into a feature once (``prepare``) and scores two features
(``compare``) in ``[0, 1]``, higher meaning more alike.  Methods are built only from the public
functions of the lower layers (``neardup.sketch.sign`` and ``neardup.similarity``), so what is
evaluated is exactly what users run:

============== ========================================================================
name           score
============== ========================================================================
``sentences``  bottom-k Jaccard of the sentence sketches (seed 000)
``shingles``   exact Jaccard of the word-shingle sets (seed 002)
``spotsigs``   exact Jaccard of the SpotSigs sets (Theobald et al., SIGIR 2008)
``minhash``    MinHash estimate of the shingle Jaccard (Broder 1997)
``simhash``    ``1 - hamming / bits`` of the SimHash fingerprints (Charikar 2002; seed 003)
``containment``the larger containment of the two word-shingle sets (Broder 1997): partial
               copies (a quotation, a truncated copy) score high
``rule``       the near-duplicate rule's duplicate verdict as one score (:func:`rule_score`):
               both coverages of the prose (:mod:`neardup.rule`); 0.5 is the rule's boundary
``<m>+lcs``    verification (seed 002): :func:`lcs_ratio` of the two texts (longest common
               run of tokens / token length of the longer text) when method ``<m>`` scores at least
               its default threshold (the candidate cut), else 0
============== ========================================================================

and, for comparison with what a user would otherwise pick (only when the package is
installed): ``datasketch`` (``datasketch.MinHash``, 128 permutations, word 4-shingles of
lower-cased ``\\w+`` words), ``datasketch-lsh`` (the same, behind ``MinHashLSH(threshold=0.5)``:
0 unless the pair is an LSH candidate), ``rensa`` (``rensa.RMinHash``, same shingles) and
``simhash-pkg`` (the ``simhash`` package's ``Simhash(text)``, its default features).

A method whose lower-layer scheme is not available in this installation is simply absent
from :func:`available_methods`; :func:`get_method` raises ``ConfigError`` naming it.
Scoring is deterministic (every scheme has explicit seeds).
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.errors import ConfigError, NotFoundError
from neardup.text import tokenize

__all__ = [
    "BASE_METHODS",
    "EXTERNAL_METHODS",
    "EXTRA_METHODS",
    "Method",
    "available_methods",
    "get_method",
    "lcs_ratio",
    "lcs_ratio_tokens",
    "lcs_tokens",
    "rule_score",
    "score_many",
    "score_pairs",
]

BASE_METHODS = ("sentences", "shingles", "spotsigs", "minhash", "simhash")
# Other neardup scorers, evaluated but not signature schemes of their own.
EXTRA_METHODS = ("containment", "rule")
EXTERNAL_METHODS = ("datasketch", "datasketch-lsh", "rensa", "simhash-pkg")


@dataclasses.dataclass(frozen=True)
class Method:
    """A pair scorer: ``compare(prepare(a), prepare(b))`` in ``[0, 1]``."""

    name: str
    prepare: Callable[[str], Any]
    compare: Callable[[Any, Any], float]
    default_threshold: float
    description: str

    def score(self, a: str, b: str) -> float:
        """Score two texts."""
        return self.compare(self.prepare(a), self.prepare(b))


def _similarity(name: str) -> Callable[..., Any] | None:
    """A public function of ``neardup.similarity``, or ``None`` if it has not landed."""
    for module_name in ("neardup.similarity", "neardup.similarity.sets", "neardup.similarity.lcs"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        fn = getattr(module, name, None)
        if callable(fn):
            return fn  # type: ignore[no-any-return]
    return None


def _scheme_available(scheme: str) -> bool:
    try:
        from neardup.sketch import SCHEMES
    except ImportError:  # pragma: no cover - the sketch package is part of the foundation
        return False
    return scheme in SCHEMES


def _signer(scheme: str) -> Callable[[str], Any]:
    from neardup.sketch import sign

    def prepare(text: str) -> Any:
        return sign(text, scheme)

    return prepare


def _sentences() -> Method | None:
    bottomk = _similarity("bottomk_jaccard")
    if bottomk is None or not _scheme_available("sentences"):
        return None
    from neardup.sketch import make_config

    k = int(make_config("sentences").k)  # type: ignore[attr-defined]
    return Method(
        "sentences",
        _signer("sentences"),
        lambda a, b: float(bottomk(a, b, k)),
        0.5,
        "bottom-k Jaccard of sentence CRC32 sketches (seed 000)",
    )


def _set_jaccard(scheme: str, threshold: float, what: str) -> Method | None:
    jaccard = _similarity("jaccard")
    if jaccard is None or not _scheme_available(scheme):
        return None
    return Method(scheme, _signer(scheme), lambda a, b: float(jaccard(a, b)), threshold, what)


def _containment() -> Method | None:
    containment = _similarity("containment")
    if containment is None or not _scheme_available("shingles"):
        return None
    return Method(
        "containment",
        _signer("shingles"),
        lambda a, b: max(float(containment(a, b)), float(containment(b, a))),
        0.5,
        "exact containment of word-shingle sets, the larger direction (partial copies)",
    )


def rule_score(a: Any, b: Any, config: Any = None) -> float:
    """One score for the rule's duplicate verdict (:mod:`neardup.rule`), so thresholds can be
    swept: with ``hi`` / ``lo`` the larger / smaller of the two coverages and ``t`` / ``u`` the
    rule's ``duplicate_min_coverage`` / ``duplicate_min_coverage_other``::

        score = clip(0.5 * min(hi / t, lo / u), 0, 1)

    so ``score >= 0.5`` is exactly the rule's ``duplicate`` and a higher threshold tightens
    both clauses together.  ``a`` and ``b`` are profiles (:func:`neardup.rule.profile`).
    """
    from neardup.rule import RuleConfig, pair_features

    cfg = config or RuleConfig()
    f = pair_features(a, b, cfg.width)
    hi, lo = max(f.coverage_a, f.coverage_b), min(f.coverage_a, f.coverage_b)
    t, u = cfg.duplicate_min_coverage or 1.0, cfg.duplicate_min_coverage_other or 1.0
    return float(min(1.0, max(0.0, 0.5 * min(hi / t, lo / u))))


def _rule() -> Method | None:
    from neardup.rule import profile

    return Method(
        "rule",
        lambda text: profile(text),
        rule_score,
        0.5,
        "the near-duplicate rule's duplicate verdict (both coverages of the prose)",
    )


def _minhash() -> Method | None:
    if not _scheme_available("minhash"):
        return None
    from neardup.sketch.minhash import estimate_jaccard

    return Method(
        "minhash",
        _signer("minhash"),
        lambda a, b: float(estimate_jaccard(a, b)),
        0.5,
        "MinHash estimate of the word-shingle Jaccard",
    )


def _simhash() -> Method | None:
    if not _scheme_available("simhash"):
        return None
    from neardup.sketch import make_config
    from neardup.sketch.simhash import hamming_distance

    bits = int(make_config("simhash").bits)  # type: ignore[attr-defined]
    return Method(
        "simhash",
        _signer("simhash"),
        lambda a, b: 1.0 - hamming_distance(a, b) / bits,
        1.0 - 3 / bits,
        f"1 - Hamming distance / {bits} of SimHash fingerprints (seed 003: duplicate at d <= 3)",
    )


# --- LCS verification ---------------------------------------------------------------------


def lcs_tokens(text: str) -> tuple[str, ...]:
    """The token sequence LCS verification compares (the default text stage: case-folded,
    stemmed words and numbers; punctuation, spacing and line breaks do not count)."""
    return tokenize(text).forms


def lcs_ratio_tokens(a: Sequence[str], b: Sequence[str]) -> float:
    """Longest common run of tokens / the longer sequence's length (1.0 for two empty)."""
    from neardup.similarity import longest_common_substring

    if not a or not b:
        return 1.0 if len(a) == len(b) else 0.0
    found = longest_common_substring(a, b)
    return min(found.ratio_a, found.ratio_b)


def lcs_ratio(a: str, b: str) -> float:
    """Seed 002's final check: the longest common substring of two texts as a ratio to the
    document length, taken for the *longer* document, so a duplicate must share one long
    passage covering both.  Measured on token sequences (:func:`lcs_tokens`), so case,
    spacing and punctuation differences do not cut the passage.  Exact; 1.0 for two texts
    without tokens."""
    return lcs_ratio_tokens(lcs_tokens(a), lcs_tokens(b))


def _lcs_ratio_fn() -> Callable[[str, str], float] | None:
    if _similarity("longest_common_substring") is None:
        return None
    return lcs_ratio


def _with_lcs(base: Method, candidate: float | None = None) -> Method | None:
    if _lcs_ratio_fn() is None:
        return None
    cut = base.default_threshold if candidate is None else candidate

    def prepare(text: str) -> tuple[Any, tuple[str, ...]]:
        return base.prepare(text), lcs_tokens(text)

    def compare(a: tuple[Any, tuple[str, ...]], b: tuple[Any, tuple[str, ...]]) -> float:
        if base.compare(a[0], b[0]) < cut:
            return 0.0
        return lcs_ratio_tokens(a[1], b[1])

    return Method(
        f"{base.name}+lcs",
        prepare,
        compare,
        0.5,
        f"{base.description}, verified by the longest-common-substring ratio "
        f"(candidates at {base.name} >= {cut:.3g})",
    )


# --- external libraries ----------------------------------------------------------------------

_EXT_WORD_RE = re.compile(r"\w+")
_EXT_WIDTH = 4


def _ext_shingles(text: str) -> list[str]:
    words = _EXT_WORD_RE.findall(text.lower())
    if len(words) < _EXT_WIDTH:
        return [" ".join(words)] if words else []
    return [" ".join(words[i : i + _EXT_WIDTH]) for i in range(len(words) - _EXT_WIDTH + 1)]


def _datasketch_minhash() -> Callable[[str], Any] | None:
    """``text -> datasketch.MinHash`` (128 permutations) of its word 4-shingles, or ``None``
    when datasketch is not installed."""
    try:
        from datasketch import MinHash
    except ImportError:
        return None

    def prepare(text: str) -> Any:
        m = MinHash(num_perm=128, seed=1)
        m.update_batch([s.encode("utf-8") for s in _ext_shingles(text)])
        return m

    return prepare


def _estimated_jaccard(name: str, prepare: Callable[[str], Any], description: str) -> Method:
    """A library's MinHash scored by its own Jaccard estimate, at the threshold 0.5."""
    return Method(name, prepare, lambda a, b: float(a.jaccard(b)), 0.5, description)


def _datasketch() -> Method | None:
    prepare = _datasketch_minhash()
    if prepare is None:
        return None
    return _estimated_jaccard(
        "datasketch", prepare, "datasketch.MinHash (128 permutations) of word 4-shingles"
    )


def _datasketch_lsh() -> Method | None:
    """What a datasketch user gets from ``MinHashLSH(threshold=0.5)`` then ``jaccard``: the
    estimate when the pair shares a band (an LSH candidate), else 0.  The band test is the
    index's own: the pair is a candidate exactly when some band's ``r`` hash values are equal
    (``MinHashLSH.b`` bands of ``r`` rows, chosen by datasketch for the threshold)."""
    prepare = _datasketch_minhash()
    if prepare is None:
        return None
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=0.5, num_perm=128)
    bands, rows = int(lsh.b), int(lsh.r)

    def compare(a: Any, b: Any) -> float:
        n = bands * rows
        same = (a.hashvalues[:n] == b.hashvalues[:n]).reshape(bands, rows).all(axis=1)
        return float(a.jaccard(b)) if bool(same.any()) else 0.0

    return Method(
        "datasketch-lsh",
        prepare,
        compare,
        0.5,
        f"datasketch.MinHashLSH(threshold=0.5, 128 permutations: {bands} bands x {rows} rows) "
        "candidates, scored by the MinHash estimate (0 when not a candidate)",
    )


def _rensa() -> Method | None:
    try:
        from rensa import RMinHash
    except ImportError:
        return None

    def prepare(text: str) -> Any:
        m = RMinHash(num_perm=128, seed=1)
        m.update(_ext_shingles(text))
        return m

    return _estimated_jaccard(
        "rensa", prepare, "rensa.RMinHash (128 permutations) of word 4-shingles"
    )


def _simhash_pkg() -> Method | None:
    try:
        from simhash import Simhash
    except ImportError:
        return None
    return Method(
        "simhash-pkg",
        lambda text: Simhash(text),
        lambda a, b: 1.0 - a.distance(b) / 64.0,
        1.0 - 3 / 64,
        "simhash package Simhash(text) (character 4-grams), 1 - distance / 64",
    )


_BUILDERS: dict[str, Callable[[], Method | None]] = {
    "sentences": _sentences,
    "shingles": lambda: _set_jaccard("shingles", 0.5, "exact Jaccard of word-shingle sets"),
    "spotsigs": lambda: _set_jaccard("spotsigs", 0.5, "exact Jaccard of SpotSigs sets"),
    "containment": _containment,
    "rule": _rule,
    "minhash": _minhash,
    "simhash": _simhash,
    "datasketch": _datasketch,
    "datasketch-lsh": _datasketch_lsh,
    "rensa": _rensa,
    "simhash-pkg": _simhash_pkg,
}


def available_methods(include_lcs: bool = True, include_external: bool = True) -> list[str]:
    """Names of the methods this installation can run, in a stable order."""
    names: list[str] = []
    for name in BASE_METHODS:
        if _BUILDERS[name]() is not None:
            names.append(name)
            if include_lcs and _lcs_ratio_fn() is not None:
                names.append(f"{name}+lcs")
    names.extend(n for n in EXTRA_METHODS if _BUILDERS[n]() is not None)
    if include_external:
        names.extend(n for n in EXTERNAL_METHODS if _BUILDERS[n]() is not None)
    return names


def get_method(name: str, candidate: float | None = None) -> Method:
    """The method called ``name`` (``"<m>+lcs"`` adds verification); ``ConfigError`` if
    unknown or not available here.  ``candidate`` overrides the ``+lcs`` candidate cut."""
    base_name, plus, suffix = name.partition("+")
    if base_name not in _BUILDERS or (plus and suffix != "lcs"):
        known = ", ".join([*BASE_METHODS, *EXTRA_METHODS, *EXTERNAL_METHODS])
        raise ConfigError(f"unknown method {name!r}; known: {known} (and <method>+lcs)")
    base = _BUILDERS[base_name]()
    if base is None:
        raise ConfigError(f"method {base_name!r} is not available in this installation")
    if not plus:
        return base
    verified = _with_lcs(base, candidate)
    if verified is None:
        raise ConfigError("LCS verification is not available (neardup.similarity has no LCS)")
    return verified


def score_pairs(
    method: Method,
    pairs: Iterable[tuple[str, str]],
    texts: Mapping[str, str],
    cache: dict[str, Any] | None = None,
) -> npt.NDArray[np.float64]:
    """Scores of ``(id1, id2)`` pairs; each text is prepared once (``NotFoundError`` if an id
    has no text).  Pass ``cache`` to reuse prepared features across calls."""
    prepared: dict[str, Any] = {} if cache is None else cache

    def feature(doc_id: str) -> Any:
        if doc_id not in prepared:
            if doc_id not in texts:
                raise NotFoundError(f"pair refers to unknown document {doc_id!r}")
            prepared[doc_id] = method.prepare(texts[doc_id])
        return prepared[doc_id]

    return np.array([method.compare(feature(a), feature(b)) for a, b in pairs], dtype=np.float64)


def score_many(
    methods: Sequence[Method], pairs: Sequence[tuple[str, str]], texts: Mapping[str, str]
) -> dict[str, npt.NDArray[np.float64]]:
    """Scores of the same pairs with several methods (one feature cache per method)."""
    return {m.name: score_pairs(m, pairs, texts) for m in methods}
