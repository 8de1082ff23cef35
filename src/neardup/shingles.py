"""Shingles and fingerprints: the only place where text is encoded and hashed.

Tokens become 64-bit integers here, and every later stage works on those integers.

* Token hashes are ``xxh3_64`` of the token's UTF-8 bytes with an explicit seed.
* A word shingle of ``width`` consecutive tokens (w-shingling, Broder 1997; seed 002) is a
  polynomial combination of its token hashes mod 2**64 followed by the splitmix64 finaliser,
  computed for all positions at once with numpy.
* Spot signatures (SpotSigs, Theobald, Siddharth and Paepcke, SIGIR 2008; seed 002): at every
  *antecedent* (a frequent stop word), the chain of the next ``chain_length`` non-stop-word
  tokens, each found at least ``spot_distance`` tokens after the previous bead, hashed
  together with the antecedent.  Vectorised with numpy (a "next non-stop token" table).
* :func:`token_hashes` is the signature fast path: text -> token hashes through the text
  stage's compiled scanner (any Unicode text), each raw token hashed once per process,
  identical to ``hash_forms(tokenize(text).forms)``.
* Sentence shingles (seed 000) are CRC32 of the sentence's normalised terms joined by spaces.

Guarantees: pure and deterministic (no salted ``hash()``; explicit seeds; integer arithmetic
that wraps identically everywhere), so the same text and parameters give the same integers on
every machine and process.  Golden values pin them in ``tests/test_shingles.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from functools import lru_cache
from itertools import chain

import numpy as np
import numpy.typing as npt
import xxhash

from neardup._jit import compiled_worthwhile
from neardup._memo import bounded_cache
from neardup._mix import GOLDEN, splitmix64
from neardup.errors import ConfigError
from neardup.text import (
    PYTHON_NS_PER_CHAR,
    TextConfig,
    ensure_text,
    forms_of_raw_tokens,
    raw_tokens,
    token_values,
    token_values_and_spans,
    tokenize,
)

__all__ = [
    "SPOTSIGS_ANTECEDENTS",
    "SPOTSIGS_CHAIN_LENGTH",
    "SPOTSIGS_SPOT_DISTANCE",
    "hash_forms",
    "hash_set",
    "mix64",
    "spot_signatures",
    "token_hashes",
    "token_hashes_and_spans",
    "word_shingles",
    "word_shingles_numpy",
]

U64 = npt.NDArray[np.uint64]

# Odd 64-bit multiplier of the polynomial shingle combination (the golden ratio constant).
_POLY = GOLDEN


def hash_forms(forms: Sequence[str], seed: int = 0) -> U64:
    """64-bit hashes of token forms (``xxh3_64`` of UTF-8, ``seed``), in token order."""
    digest = xxhash.xxh3_64_intdigest
    return np.fromiter(
        (digest(f.encode("utf-8", "surrogatepass"), seed) for f in forms),
        dtype=np.uint64,
        count=len(forms),
    )


def mix64(values: U64) -> U64:
    """:func:`neardup._mix.splitmix64` element-wise on a copy of ``values`` (always an array)."""
    return splitmix64(np.array(values, dtype=np.uint64, ndmin=1))


def word_shingles(token_hashes: U64, width: int) -> U64:
    """Hashes of all ``width``-token windows, in position order (duplicates kept).

    A text with fewer than ``width`` (but at least one) tokens yields one shingle of all its
    tokens, so short texts still have a signature; no tokens yield an empty array.  Runs a
    compiled kernel (:mod:`neardup._kernels`), tested equal to the numpy reference
    :func:`word_shingles_numpy`.
    """
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise ConfigError(f"shingle width must be a positive integer, got {width!r}")
    hashes = np.asarray(token_hashes, dtype=np.uint64)
    if not compiled_worthwhile(2_000 + 4 * hashes.shape[0] * width):
        return word_shingles_numpy(hashes, width)
    from neardup import _kernels

    return _kernels.word_shingles(hashes, width)


def word_shingles_numpy(token_hashes: U64, width: int) -> U64:
    """Reference numpy implementation of :func:`word_shingles` (same values)."""
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise ConfigError(f"shingle width must be a positive integer, got {width!r}")
    h = np.asarray(token_hashes, dtype=np.uint64)
    n = h.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    w = min(width, n)
    count = n - w + 1
    acc = h[:count].copy()
    for i in range(1, w):
        acc *= _POLY
        acc += h[i : i + count]
    # Tag the width into the hash so shingles of different widths never coincide.
    acc += np.uint64(w)
    return mix64(acc)


# --- fast path: text -> token hashes --------------------------------------------------------

_HASH_CACHE_LIMIT = 1 << 18
_hash_caches: dict[Hashable, dict[str, tuple[int, ...]]] = {}


def _hash_cache(config: TextConfig, seed: int) -> dict[str, tuple[int, ...]]:
    return bounded_cache(_hash_caches, (config, seed), _HASH_CACHE_LIMIT)


@lru_cache(maxsize=64)
def _token_hash(seed: int) -> Callable[[str], int]:
    """The token hash of one form with ``seed`` (the function :func:`hash_forms` applies)."""
    digest = xxhash.xxh3_64_intdigest

    def token_hash(form: str) -> int:
        return digest(form.encode("utf-8", "surrogatepass"), seed)

    return token_hash


_channels: dict[int, tuple[tuple[str, int], Callable[[str], int]]] = {}


def _hash_channel(seed: int) -> tuple[tuple[str, int], Callable[[str], int]]:
    """The text stage's memo channel of the token hash with ``seed``."""
    channel = _channels.get(seed)
    if channel is None:
        channel = _channels[seed] = (("xxh3_64", seed), _token_hash(seed))
    return channel


def token_hashes(text: str, config: TextConfig, seed: int = 0) -> U64:
    """``hash_forms(tokenize(text, config).forms, seed)``, computed several times faster.

    Each distinct raw token of the process is normalised, stemmed and hashed once, then
    looked up: the compiled scanner of the text stage finds the raw tokens of any text
    (:func:`neardup.text.token_values`); short work in a process that has not loaded the
    compiled kernels goes through the token regular expression and a dict instead.
    Deterministic: the caches only memoise a pure function (tested equal to the slow path).
    """
    if compiled_worthwhile(PYTHON_NS_PER_CHAR * len(ensure_text(text))):
        return token_values(text, config, _hash_channel(seed))
    cache = _hash_cache(config, seed)
    raws = raw_tokens(text)
    try:
        parts = [cache[r] for r in raws]
    except KeyError:
        token_hash = _token_hash(seed)
        new = list(dict.fromkeys(r for r in raws if r not in cache))
        for r, forms in zip(new, forms_of_raw_tokens(new, config), strict=True):
            cache[r] = tuple(token_hash(f) for f in forms)
        parts = [cache[r] for r in raws]
    return np.fromiter(chain.from_iterable(parts), dtype=np.uint64)


def token_hashes_and_spans(
    text: str, config: TextConfig, seed: int = 0
) -> tuple[U64, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`token_hashes` with each token's ``[start, end)`` character span in ``text`` (the
    spans of :func:`neardup.text.tokenize`): one compiled scan, or ``tokenize`` for short work
    in a process that has not loaded the compiled kernels (tested equal)."""
    text = ensure_text(text)
    if compiled_worthwhile(PYTHON_NS_PER_CHAR * len(text)):
        return token_values_and_spans(text, config, _hash_channel(seed))
    toks = tokenize(text, config)
    return (
        hash_forms(toks.forms, seed),
        np.asarray(toks.starts, dtype=np.int64),
        np.asarray(toks.ends, dtype=np.int64),
    )


def hash_set(forms: Iterable[str], seed: int = 0) -> U64:
    """Sorted distinct hashes of ``forms`` (for membership tests with ``np.isin``)."""
    from neardup._kernels import distinct

    return distinct(hash_forms(list(forms), seed))


# --- SpotSigs -------------------------------------------------------------------------------

# Defaults of the SpotSigs reference implementation released with the paper (Theobald,
# Siddharth, Paepcke, SIGIR 2008; its spotsigs.config): these English antecedents, each with
# spot distance 1.  The paper's worked example uses chain length 2 with uniform spot distance
# 1 ("a:rally:kick", "the:south:carolina"); the reference config ships chain length 1 and
# its experiment configs try 1 and 2.  We default to 2: on Reuters, single-bead signatures
# ("the:year") make unrelated articles look alike (99.9th percentile Jaccard 0.167 at chain
# 1, 0.100 at 2, 0.053 at 3) while chain 2 still keeps edited copies close (median 0.64 at
# 10 % edits); benchmarks/bench_shingle_params.py.
SPOTSIGS_ANTECEDENTS: frozenset[str] = frozenset(
    """that in the be is are was will would shall should can could has have had do did does
    done""".split()  # noqa: SIM905
)
SPOTSIGS_SPOT_DISTANCE = 1
SPOTSIGS_CHAIN_LENGTH = 2

# Tag added before finalising a spot signature, so that it never equals a word shingle of
# the same tokens ("SPOT" in ASCII).
_SPOT_TAG = np.uint64(0x53504F5400000000)


def _member(values: U64, sorted_set: U64) -> npt.NDArray[np.bool_]:
    """``np.isin(values, sorted_set)`` for a sorted ``sorted_set``, by binary search
    (several times faster than ``np.isin`` on article-sized arrays)."""
    s = np.asarray(sorted_set, dtype=np.uint64)
    if s.shape[0] == 0:
        return np.zeros(values.shape[0], dtype=bool)
    if s.shape[0] > 1 and not bool(np.all(s[1:] >= s[:-1])):
        s = np.sort(s)  # callers normally pass hash_set() output, already sorted
    pos = np.searchsorted(s, values)
    np.minimum(pos, s.shape[0] - 1, out=pos)
    member: npt.NDArray[np.bool_] = s[pos] == values
    return member


def _next_nonstop_table(is_stop: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """``table[x]`` = smallest non-stop position >= x, or n when none (length n + 1)."""
    n = is_stop.shape[0]
    idx = np.where(is_stop, n, np.arange(n, dtype=np.int64))
    table = np.empty(n + 1, dtype=np.int64)
    table[n] = n
    table[:n] = np.minimum.accumulate(idx[::-1])[::-1]
    return table


def spot_signatures(
    token_hashes: U64,
    antecedent_hashes: U64,
    stop_hashes: U64,
    spot_distance: int = SPOTSIGS_SPOT_DISTANCE,
    chain_length: int = SPOTSIGS_CHAIN_LENGTH,
) -> U64:
    """Hashes of the spot signatures of a token sequence, in antecedent order (duplicates kept).

    ``antecedent_hashes`` and ``stop_hashes`` are sets of token hashes (ideally sorted, as
    :func:`hash_set` returns them).  At each token whose hash is an antecedent the chain is
    built as in the SpotSigs reference implementation: bead 1 is the first non-stop token at
    position >= antecedent position + ``spot_distance``, bead j+1 the first non-stop token
    at >= bead j + ``spot_distance``; tokens in ``stop_hashes`` are skipped.  A chain cut
    short by the end of the text keeps the beads it found (as the reference does); an
    antecedent with no bead after it gives nothing.  The hash covers the antecedent, the
    beads in order and the number of beads.  Vectorised: O(n * chain_length).
    """
    for name, value in (("spot_distance", spot_distance), ("chain_length", chain_length)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    h = np.asarray(token_hashes, dtype=np.uint64)
    n = h.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    anchors = np.flatnonzero(_member(h, antecedent_hashes))
    if anchors.shape[0] == 0:
        return np.empty(0, dtype=np.uint64)
    table = _next_nonstop_table(_member(h, stop_hashes))
    padded = np.append(h, np.uint64(0))  # position n = "no bead"
    acc = h[anchors].copy()
    beads = np.zeros(anchors.shape[0], dtype=np.uint64)
    pos = anchors
    for _ in range(chain_length):
        pos = table[np.minimum(pos + spot_distance, n)]
        found = pos < n
        acc = np.where(found, acc * _POLY + padded[pos], acc)
        beads += found.astype(np.uint64)
    keep = beads > 0
    acc = acc[keep] + _SPOT_TAG + beads[keep]
    return mix64(acc)
