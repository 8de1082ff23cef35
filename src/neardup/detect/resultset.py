"""Realtime near-duplicate removal from a ranked result set (seed 000).

The situation of seed 000: a search serves ~100 articles whose signatures were computed
offline (:func:`neardup.sign`); before the page goes out, every article that
near-duplicates a better-ranked one is found, within a budget of milliseconds.

:func:`dedup_result_set` answers, for each position ``i``::

    result[i] = min { j < i : dup(i, j) }   or i when there is no such j

Positions with ``result[i] == i`` are kept; the ranking order is preserved and the first item
of a duplicate group is the one kept.  The relation is *not* closed transitively:
``result[i]`` is the earliest item that ``i`` itself near-duplicates, which may in turn point
to an earlier one (``result[result[i]] <= result[i]``, so following the pointers always ends
at a kept item).  ``dup`` depends on the signatures' scheme:

* **coverage sketches** (``neardup.sign(text)``, the default scheme,
  :mod:`neardup.rule.coverage`): ``dup`` is the near-duplicate rule's ``duplicate``
  verdict (:mod:`neardup.rule`, thresholds of ``rule``) on the two coverages estimated from
  the sketches, for the pairs that share a sampled shingle (a sampled word and the shingle
  starting at it).  It equals ``judge(a, b).label == "duplicate"`` up to the sketch's
  sampling error (docs/resultset.md, "How accurate").  Two texts without words are never
  duplicates (the rule's coverage of an empty text is 0);
* **set sketches** (seed 000's sentence sketch, ``neardup.sign(text, "sentences")``):
  ``dup`` is ``sim(i, j) >= threshold`` for the bottom-k Jaccard estimate ``sim``
  (:func:`neardup.similarity.bottomk_jaccard`; the exact Jaccard of the sentence sets when
  both articles have at most ``k`` distinct sentences).  An empty signature (an article
  without a sentence) is a near-duplicate only of another empty signature.

How it is fast (the seed asks for < 10 ms and reports < 1 ms for 100 articles):

1. The sketches are laid out flat (one ``values`` array plus row offsets).
2. A compiled kernel (numba) walks the rows in rank order with a small open-addressing hash
   table from key to the rows holding it (sentence hashes; for coverage sketches, each
   sampled occurrence's word and shingle), so each row meets only the earlier rows that
   share a key with it; the other pairs cannot be duplicates and are never compared.
3. Set sketches: candidates that share too few values to reach the threshold are skipped,
   the others get the sorted merge with early termination of seed 000
   (:func:`neardup.similarity.bottomk_at_least`); the first hit wins.  Coverage sketches:
   each candidate's two coverages are estimated (:func:`neardup.sketch.coverage.pair_counts`)
   and two bounds of the rule decide most pairs in the kernel (the smaller coverage at
   least ``duplicate_min_coverage``: duplicate; below ``duplicate_min_coverage_other``:
   not; :func:`neardup.rule.coverage.duplicate_bounds`, property-tested against the
   rule); the few in between are decided by the rule's own clauses in Python.
4. A bounded LRU cache of session sets (seed 000: "hashing and caching the session set")
   answers a repeated set without recomputation.  Its key is the 128-bit xxh3 digest of the
   signatures' own 128-bit digests (:meth:`Signature.digest`, cached on each signature) with
   the threshold and ``k`` (or the rule's scheme id) (deterministic; a false hit needs a
   128-bit collision).

Complexity: O(V + P + C·c) time for V = total sketch keys, P = pairs (row, earlier row)
sharing a key, C <= P candidates and c the cost of comparing two sketches (a merge of at
most 2k values, or of the two sketches' word lists); O(V + n) memory.  Worst case (every
article shares a key with every other) O(n²·c), the all-pairs bound.  Measured latency is in
``docs/resultset.md``.
"""

from __future__ import annotations

import struct
import threading
from collections import OrderedDict
from collections.abc import Sequence
from itertools import accumulate
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from neardup.config import check_int
from neardup.detect._resultset_kernels import MIN_SHARED_KEYS, _coverage_kernel, _dedup_kernel
from neardup.errors import (
    ConfigError,
    InputError,
    InputTypeError,
    SchemeMismatchError,
    SignatureFormatError,
)
from neardup.rule import RuleConfig
from neardup.rule.coverage import duplicate_bounds, is_duplicate, scheme_for
from neardup.similarity import need_table
from neardup.sketch.base import Signature
from neardup.sketch.bottomk import SentenceSketchConfig
from neardup.sketch.coverage import HEADER_WORDS as _HEADER
from neardup.sketch.coverage import (
    MAX_SAMPLE_SIZE,
    MAX_WORD_COUNT,
    direction_counts_reference,
    parse,
)

__all__ = [
    "DEFAULT_K",
    "ResultSetDeduper",
    "dedup_result_set",
    "default_deduper",
    "kept_of",
    "reference_dedup",
]

DEFAULT_K: int = SentenceSketchConfig().k
DEFAULT_THRESHOLD = 0.5  # seed 000's threshold for set sketches when none is given
DEFAULT_RULE = RuleConfig()  # one instance: its scheme id is computed once


def _flatten(
    signatures: Sequence[Signature],
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64], int]:
    """Concatenated values, row offsets and the longest row of ``signatures``."""
    arrays = [s.values for s in signatures]
    lengths = np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays))
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.uint32)
    return values, offsets, int(lengths.max(initial=0))


_values_of = attrgetter("values")
_cached_digest = attrgetter("_digest")


def _flatten_u32(
    signatures: Sequence[Signature],
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]] | None:
    """:func:`_flatten` of non-empty contiguous ``uint32`` rows in one copy, else None.

    One ``bytes.join`` of the rows' buffers costs about half of ``np.concatenate`` on a
    hundred small arrays.  Every row is ``uint32`` exactly when the joined buffer holds four
    bytes a value (a non-empty ``uint64`` row holds eight); the other cases (an empty or a
    strided row) are left to :func:`_flatten`.
    """
    arrays = list(map(_values_of, signatures))
    lengths = list(map(len, arrays))
    try:
        blob = bytearray().join(arrays)
    except (BufferError, TypeError):  # a strided row exports no buffer
        return None
    if len(blob) != 4 * sum(lengths) or 0 in lengths:
        return None
    offsets = np.fromiter(accumulate(lengths, initial=0), np.int64, len(lengths) + 1)
    return np.frombuffer(blob, dtype=np.uint32), offsets


def _set_digest(signatures: Sequence[Signature]) -> bytes:
    """The rows' digests joined: read from the rows when cached (one C-level pass), else
    computed by :meth:`Signature.digest`."""
    try:
        return b"".join(map(_cached_digest, signatures))
    except (TypeError, AttributeError):  # a digest not computed yet, or not a Signature
        return b"".join(map(Signature.digest, signatures))


def _is_coverage(sig: object) -> bool:
    return isinstance(sig, Signature) and sig.scheme == "coverage"


def _params(coverage: bool, threshold: float | None, k: int | None, rule: object) -> bytes:
    """Validate the comparison parameters; the bytes that name them in the cache key."""
    if coverage:
        if threshold is not None or k is not None:
            raise ConfigError(
                "threshold and k apply to set sketches (the 'sentences' scheme); coverage "
                "sketches are judged by the near-duplicate rule (rule=RuleConfig(...))"
            )
        if rule is None:
            rule = DEFAULT_RULE
        if not isinstance(rule, RuleConfig):
            raise ConfigError(f"rule must be a RuleConfig, got {type(rule).__name__}")
        return rule.scheme_id.encode("ascii")
    if rule is not None:
        raise ConfigError("rule applies to coverage sketches (neardup.sign(text, 'coverage'))")
    if k is not None:
        check_int("k", k, low=1, high=(1 << 63) - 1)  # the cache key holds it as an int64
    value = DEFAULT_THRESHOLD if threshold is None else threshold
    need_table(value, 1)  # validates threshold in (0, 1]
    return struct.pack("<dq", value, k or 0)


def _check_rule(first: Signature, rule: RuleConfig) -> None:
    """The sketches must sample the profile of ``rule`` (its width, furniture, text stage)."""
    v = first.values
    made = scheme_for(int(v[1]), int(v[2]), rule.profile_id) if len(v) >= _HEADER else None
    if made != first.scheme_id:
        raise SchemeMismatchError(
            f"the sketches ({first.scheme_id}) were not made with this rule's profile; sign "
            "the texts with neardup.sign(text, 'coverage', rule=<the same RuleConfig>)"
        )


def _check_signatures(signatures: Sequence[Signature]) -> None:
    scheme = None
    for pos, sig in enumerate(signatures):
        if not isinstance(sig, Signature):
            raise InputTypeError(
                f"dedup_result_set takes Signatures (neardup.sign), got {type(sig).__name__} "
                f"at position {pos}"
            )
        if scheme is None:
            scheme = sig.scheme_id
        elif sig.scheme_id != scheme:
            raise SchemeMismatchError(
                f"a result set must use one signature scheme: position {pos} is "
                f"{sig.scheme_id}, position 0 is {scheme}"
            )


class ResultSetDeduper:
    """:func:`dedup_result_set` with its own bounded LRU cache of session sets.

    ``max_entries`` bounds the number of cached sets and ``max_positions`` the total number of
    positions they hold (each costs 4 bytes in the cache), so the cache never holds more than
    about ``max_entries * 100 + 4 * max_positions`` bytes.  ``max_entries=0`` disables it.
    Thread-safe: the cache is guarded by a lock and the kernel releases the GIL.
    """

    def __init__(self, max_entries: int = 4096, max_positions: int = 1 << 20) -> None:
        check_int("max_entries", max_entries, low=0)
        check_int("max_positions", max_positions, low=0)
        self.max_entries = max_entries
        self.max_positions = max_positions
        self._cache: OrderedDict[bytes, npt.NDArray[np.int32]] = OrderedDict()
        self._positions = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def cache_info(self) -> dict[str, int]:
        """Hits, misses, cached sets and cached positions."""
        with self._lock:
            return {
                "hits": self.hits,
                "misses": self.misses,
                "entries": len(self._cache),
                "positions": self._positions,
                "max_entries": self.max_entries,
                "max_positions": self.max_positions,
            }

    def cache_clear(self) -> None:
        """Empty the cache and reset its counters."""
        with self._lock:
            self._cache.clear()
            self._positions = 0
            self.hits = self.misses = 0

    def __call__(
        self,
        signatures: Sequence[Signature],
        threshold: float | None = None,
        *,
        k: int | None = None,
        rule: RuleConfig | None = None,
    ) -> list[int]:
        """See :func:`dedup_result_set`."""
        if not isinstance(signatures, list | tuple):
            if isinstance(signatures, Signature | str | bytes):
                raise InputTypeError("dedup_result_set takes a sequence of Signatures")
            signatures = list(signatures)
        coverage = bool(signatures) and _is_coverage(signatures[0])
        params = _params(coverage, threshold, k, rule)
        if not signatures:
            return []
        try:  # each signature's digest is cached on it: a repeated set costs one short hash
            blob = _set_digest(signatures)
        except (TypeError, AttributeError):
            _check_signatures(signatures)  # raises the precise error
            raise
        key = xxhash.xxh3_128_digest(blob) + params
        if self.max_entries:
            with self._lock:
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
                    self.hits += 1
                    return hit.tolist()  # type: ignore[no-any-return]
        _check_signatures(signatures)
        if coverage:
            result = self._compute_coverage(signatures, rule or DEFAULT_RULE)
        else:
            result = self._compute(signatures, threshold or DEFAULT_THRESHOLD, k)
        self._store(key, result)
        return result.tolist()  # type: ignore[no-any-return]

    def _compute(
        self, signatures: Sequence[Signature], threshold: float, k: int | None
    ) -> npt.NDArray[np.int32]:
        values, offsets, longest = _flatten(signatures)
        k_eff = k if k is not None else max(DEFAULT_K, longest)
        # A k beyond every row trims nothing and makes no row full: longest + 1 answers the
        # same, and sizes the table of needed matches by the rows rather than by k.
        k_eff = min(k_eff, longest + 1)
        need = need_table(threshold, 2 * k_eff)
        out = np.empty(len(signatures), dtype=np.int32)
        if values.dtype.kind != "u":
            raise InputError(f"signature values must be unsigned integers, got {values.dtype}")
        bad = _dedup_kernel(values, offsets, k_eff, need, out)
        if bad >= 0:
            raise InputError(
                f"signature at position {bad} ({signatures[bad].scheme_id}) is not a sorted "
                "set of distinct values; dedup_result_set compares set sketches such as "
                "the 'sentences' scheme"
            )
        return out

    def _compute_coverage(
        self, signatures: Sequence[Signature], rule: RuleConfig
    ) -> npt.NDArray[np.int32]:
        _check_rule(signatures[0], rule)
        flat = _flatten_u32(signatures)
        if flat is None:
            values, offsets, _ = _flatten(signatures)
            if values.dtype != np.uint32:
                raise SignatureFormatError(
                    f"coverage sketches hold uint32 values, got {values.dtype}"
                )
        else:
            values, offsets = flat
        accept_at, reject_below = duplicate_bounds(rule)
        # Eligible tokens are at most the sampled ones: sample_size + max_word_count - 1.  The
        # header is not checked yet (the kernel does): a larger claim is refused there, so the
        # table never needs to be longer than the largest sample a sketch can declare.
        size = max(min(int(values[1]), MAX_SAMPLE_SIZE) + min(int(values[2]), MAX_WORD_COUNT), 1)
        need = need_table(reject_below, size) if reject_below > 0 else np.zeros(1, np.int64)
        out = np.empty(len(signatures), dtype=np.int32)
        bad, band = _coverage_kernel(values, offsets, accept_at, reject_below, need, out)
        if bad >= 0:
            raise SignatureFormatError(
                f"signature at position {bad} ({signatures[bad].scheme_id}) is not a "
                "well-formed coverage sketch (neardup.sign(text, 'coverage'))"
            )
        decided = -1
        for i, j, fi, ei, fj, ej in band.tolist():
            if i != decided and is_duplicate(fi / ei if ei else 0.0, fj / ej if ej else 0.0, rule):
                out[i] = j  # the earliest candidate the rule calls a duplicate
                decided = i
        return out

    def _store(self, key: bytes, result: npt.NDArray[np.int32]) -> None:
        size = int(result.size)
        result.flags.writeable = False
        with self._lock:
            self.misses += 1
            if not self.max_entries or size > self.max_positions or key in self._cache:
                return
            self._cache[key] = result
            self._positions += size
            while len(self._cache) > self.max_entries or self._positions > self.max_positions:
                _, old = self._cache.popitem(last=False)
                self._positions -= int(old.size)


default_deduper = ResultSetDeduper()


def dedup_result_set(
    signatures: Sequence[Signature],
    threshold: float | None = None,
    *,
    k: int | None = None,
    rule: RuleConfig | None = None,
) -> list[int]:
    """For each position ``i``, the earliest ``j < i`` that ``i`` near-duplicates, else ``i``.

    ``signatures``: the signatures of a ranked result set, one scheme (mixed schemes raise
    :class:`~neardup.errors.SchemeMismatchError`):

    * coverage sketches (``neardup.sign(text)``, the default): ``j`` is a near-duplicate when
      the near-duplicate rule (``rule``, default :class:`~neardup.rule.RuleConfig`) calls
      the pair ``duplicate`` on the coverages estimated from the two sketches; ``rule``
      must have the profile the sketches were made with;
    * set sketches (``neardup.sign(text, "sentences")``, seed 000): when the bottom-k Jaccard
      estimate is ``>= threshold`` (in ``(0, 1]``, default 0.5); ``k``: the ``k`` the
      sketches were made with (default: the sentence sketch's, or the longest signature).

    ``threshold`` and ``k`` with coverage sketches, or ``rule`` with set sketches, raise
    :class:`~neardup.errors.ConfigError`.  Deterministic; answered from the process-wide
    LRU cache (:data:`default_deduper`) when the same set and parameters were seen recently.
    See the module docstring for the exact semantics, complexity and the cache bound.
    """
    return default_deduper(signatures, threshold, k=k, rule=rule)


def kept_of(positions: Sequence[int]) -> list[int]:
    """For each position, the kept position its duplicate chain ends at (the group's head).

    ``positions``: an answer of :func:`dedup_result_set`.  Its pointers are not closed
    transitively (``positions[i]`` is the earliest item ``i`` itself near-duplicates, which
    may point further back); this follows them until a kept item (``positions[j] == j``),
    so the result groups every item under the best-ranked item of its chain.  A pointer
    that does not point back (``positions[j] > j``, not an answer of the function) stops
    the walk there, so the walk always ends.  O(n·d) for chains of length d.
    """
    kept = []
    for j in positions:
        while positions[j] != j and positions[j] < j:
            j = positions[j]
        kept.append(j)
    return kept


def reference_dedup(
    signatures: Sequence[Signature],
    threshold: float | None = None,
    *,
    k: int | None = None,
    rule: RuleConfig | None = None,
) -> list[int]:
    """The straightforward pure-Python version: every pair, compared in full.

    Same answer as :func:`dedup_result_set` (the tests use it as the oracle, the benchmark as
    the baseline): set sketches by a full sorted merge, coverage sketches by plain
    dictionaries (:func:`neardup.sketch.coverage.direction_counts_reference`) and the rule's
    clauses for every pair sharing enough sampled shingles; O(n²·k) Python steps.
    """
    _check_signatures(signatures)
    if signatures and _is_coverage(signatures[0]):
        _params(True, threshold, k, rule)
        return _reference_coverage(signatures, rule or DEFAULT_RULE)
    _params(False, threshold, k, rule)
    value = DEFAULT_THRESHOLD if threshold is None else threshold
    rows = [s.values.tolist() for s in signatures]
    k_eff = k if k is not None else max([DEFAULT_K, *map(len, rows)])
    rows = [r[:k_eff] for r in rows]
    result = []
    for i, a in enumerate(rows):
        result.append(i)
        for j in range(i):
            if _reference_similarity(a, rows[j], k_eff) >= value:
                result[i] = j
                break
    return result


def _reference_coverage(signatures: Sequence[Signature], rule: RuleConfig) -> list[int]:
    _check_rule(signatures[0], rule)
    parts = [parse(s.values) for s in signatures]
    if len({p.width for p in parts}) > 1:
        raise SignatureFormatError("coverage sketches of different shingle widths")
    result = []
    for i, a in enumerate(parts):
        result.append(i)
        for j in range(i):
            keys_j = parts[j].occurrence_keys
            common = len(a.occurrence_keys & keys_j)
            if not common or common < min(MIN_SHARED_KEYS, len(a.occurrence_keys), len(keys_j)):
                continue
            fi, ei = direction_counts_reference(signatures[i].values, signatures[j].values)
            fj, ej = direction_counts_reference(signatures[j].values, signatures[i].values)
            if is_duplicate(fi / ei if ei else 0.0, fj / ej if ej else 0.0, rule):
                result[i] = j
                break
    return result


def _reference_similarity(a: list[int], b: list[int], k: int) -> float:
    """Bottom-k estimate by a plain merge (see :func:`neardup.similarity.bottomk_jaccard`)."""
    if not a and not b:
        return 1.0
    a_full, b_full = len(a) >= k, len(b) >= k
    i = j = union = matches = 0
    while True:
        if (i == len(a) and j == len(b)) or (a_full and i == len(a)) or (b_full and j == len(b)):
            break
        if j == len(b) or (i < len(a) and a[i] < b[j]):
            i += 1
        elif i == len(a) or b[j] < a[i]:
            j += 1
        else:
            i += 1
            j += 1
            matches += 1
        union += 1
    return matches / union
