"""Story index: the k nearest stories of an article within a time window (seed 003).

Holds each article's story SimHash (:mod:`neardup.sketch.story`, 64 to 256 bits) with its
date, and answers "the ``k`` most similar stored stories dated in ``[since, until]``".  It
makes no decision: it returns candidates with their estimated similarity and Hamming
distance, and the caller decides (similar news, breaking events).

Scores: a query given as a :class:`~neardup.sketch.story.StoryVector` (its real components
at hand, as at ingest) is scored against each stored fingerprint with the asymmetric cosine
estimate ``sqrt(pi/2) * mean_j(u_j * s_j)`` (Dong, Charikar & Li, SIGIR 2008); a query
given only as a fingerprint with ``cos(pi * d / bits)`` of the Hamming distance ``d``
(Charikar 2002).  Both estimate the cosine of the two TF-IDF vectors.

Layout: dated rows live in one array sorted by date, so a window is two binary searches and
one contiguous scan; rows that arrive out of date order wait in a small unsorted buffer
(scanned in full, ``buffer_size`` rows at most) until they are merged in; undated rows are
kept apart and match only queries without a window.  A compiled pass scores every row of
the window: the answer is **exact** for its score (tests compare it with brute force).

Guarantees:

* **Exact, deterministic order**: results sort by score (descending), then insertion order.
  The asymmetric estimate can stray slightly outside ``[-1, 1]``; reported similarities are
  clipped to it (the order is the unclipped score's).
* **Keys**: caller keys, all ``str`` or all ``int``; adding a key again with the same
  fingerprint and date does nothing, with another raises
  :class:`~neardup.errors.ConflictError`; removing an unknown key raises
  :class:`~neardup.errors.NotFoundError`.
* **Memory**: ``bits / 8 + 26`` bytes per article in numpy arrays (fingerprint, date, id,
  live flag, position) plus the caller keys in a dict.
* **Cost**: a query scans the rows of its window: ``O(rows in window * bits / 8)`` table
  lookups (about 1 ns each), plus the buffer; with ``k``, the scan keeps the ``k`` best
  scores seen so far and writes out only rows that reach them (about ``k ln(n / k)`` of the
  window's ``n`` when scores come in random order), so the result's sort is over those rows,
  not the window.  A top-``k`` query over a window of more than ``2 * candidates`` rows
  first takes the Hamming distances of the window (popcounts only), then scores only the
  rows nearest on them (see :class:`StoryIndexConfig`): approximate, deterministic, with
  the exact score of every row returned.  Adding in date order is amortised ``O(1)``;
  an out-of-order add costs a share of an ``O(n)`` merge every ``buffer_size`` such adds.
* **Persistence**: :meth:`StoryIndex.save` / :meth:`StoryIndex.load` in the checksummed
  format of :mod:`neardup.index._common` (magic ``NDSTYIDX``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.config import check_int, check_range
from neardup.errors import (
    ConfigError,
    ConflictError,
    InputError,
    InputTypeError,
    SchemeMismatchError,
    StoreError,
)
from neardup.index._common import Key, KeyedIndex, KeyMap, read_index_file, write_index_file
from neardup.index._rows import resolve_config
from neardup.index._story_config import StoryIndexConfig
from neardup.records import epoch_us
from neardup.sketch.base import Signature
from neardup.sketch.story import StoryVector

__all__ = ["StoryHit", "StoryIndex", "StoryIndexConfig", "to_us"]

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
_MAGIC = b"NDSTYIDX"
_MAIN, _BUFFER, _UNDATED = 0, 1, 2
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1


def to_us(date: dt.datetime | int | None) -> int | None:
    """A date as microseconds since the epoch (UTC); naive datetimes are taken as UTC."""
    if date is None:
        return None
    if isinstance(date, dt.datetime):
        if date.tzinfo is None:
            date = date.replace(tzinfo=dt.UTC)
        return epoch_us(date)
    if isinstance(date, bool) or not isinstance(date, int | np.integer):
        raise InputTypeError(
            f"a date must be a datetime, microseconds since the epoch or None, "
            f"got {type(date).__name__}"
        )
    value = int(date)
    if not _I64_MIN < value < _I64_MAX:
        raise InputError(f"date {value} is outside the 64-bit microsecond range")
    return value


@dataclasses.dataclass(frozen=True, slots=True)
class StoryHit:
    """A stored story near the query: its ``key``, the estimated cosine ``similarity`` of
    the two TF-IDF vectors, the Hamming ``distance`` of the story SimHashes, its date."""

    key: Key
    similarity: float
    distance: int
    date_us: int | None


class _Run:
    """Rows of fingerprints with dates, ids and live flags (amortised doubling)."""

    __slots__ = ("alive", "dates", "fps", "ids", "n")

    def __init__(self, words: int, capacity: int = 256) -> None:
        self.fps = np.zeros((capacity, words), dtype=np.uint64)
        self.dates = np.zeros(capacity, dtype=np.int64)
        self.ids = np.zeros(capacity, dtype=np.int64)
        self.alive = np.zeros(capacity, dtype=np.bool_)
        self.n = 0

    def append(self, fp: U64, date: int, ident: int) -> int:
        n = self.n
        if n == self.dates.shape[0]:
            cap = 2 * n
            for name in ("fps", "dates", "ids", "alive"):
                old = getattr(self, name)
                new = np.zeros((cap, *old.shape[1:]), dtype=old.dtype)
                new[:n] = old[:n]
                setattr(self, name, new)
        self.fps[n] = fp
        self.dates[n] = date
        self.ids[n] = ident
        self.alive[n] = True
        self.n = n + 1
        return n

    def live(self) -> npt.NDArray[np.bool_]:
        return self.alive[: self.n]

    def replace(self, fps: U64, dates: I64, ids: I64) -> None:
        n = dates.shape[0]
        cap = max(256, n + n // 4)
        words = self.fps.shape[1]
        self.fps = np.zeros((cap, words), dtype=np.uint64)
        self.dates = np.zeros(cap, dtype=np.int64)
        self.ids = np.zeros(cap, dtype=np.int64)
        self.alive = np.zeros(cap, dtype=np.bool_)
        self.fps[:n] = fps
        self.dates[:n] = dates
        self.ids[:n] = ids
        self.alive[:n] = True
        self.n = n

    @property
    def nbytes(self) -> int:
        return int(self.fps.nbytes + self.dates.nbytes + self.ids.nbytes + self.alive.nbytes)


class StoryIndex(KeyedIndex):
    """The k nearest stories within a time window (exact, or approximate over large windows:
    see :class:`StoryIndexConfig`), with add, remove, save and load.

    >>> from neardup.sketch.story import story_vector, StoryVectorConfig
    >>> index = StoryIndex(bits=64)
    >>> cfg = StoryVectorConfig(bits=64)
    >>> index.add("a", story_vector("Summit in Helsinki ends", cfg), 0)
    >>> [h.key for h in index.nearest(story_vector("Helsinki summit", cfg), k=1)]
    ['a']
    """

    def __init__(self, config: StoryIndexConfig | None = None, **params: Any) -> None:
        self.config = config = resolve_config(StoryIndexConfig, config, params)
        self._words = config.bits // 64
        self._keys = KeyMap()
        self._main = _Run(self._words)
        self._buffer = _Run(self._words)
        self._undated = _Run(self._words)
        self._runs = (self._main, self._buffer, self._undated)
        # Per id (the KeyMap row): which run holds it and where.
        self._where = np.zeros(1024, dtype=np.int8)
        self._pos = np.zeros(1024, dtype=np.int64)
        self._dead = 0
        self.scheme_id: str | None = None

    # -- sizes -----------------------------------------------------------------------------

    @property
    def nbytes(self) -> int:
        """Bytes of the numpy arrays (keys not included)."""
        runs = sum(r.nbytes for r in self._runs)
        return int(runs + self._where.nbytes + self._pos.nbytes)

    # -- input -----------------------------------------------------------------------------

    def _fingerprint(self, story: object, adopt: bool) -> tuple[U64, StoryVector | None]:
        if isinstance(story, StoryVector):
            if story.is_empty:
                raise InputError("an empty story vector (a text without words) has no story")
            words, scheme, vector = story.fingerprint, story.scheme_id, story
        elif isinstance(story, Signature):
            if len(story) == 0:
                raise InputError("an empty story signature has no story")
            words, scheme, vector = story.values, story.scheme_id, None
        else:
            raise InputTypeError(
                f"a story must be a StoryVector or a story Signature, got {type(story).__name__}"
            )
        if not scheme.startswith("story/"):
            raise SchemeMismatchError(f"a story index takes story signatures, got {scheme}")
        if words.dtype != np.uint64 or words.shape != (self._words,):
            raise SchemeMismatchError(
                f"this index holds {self.config.bits}-bit story fingerprints; got "
                f"{words.shape[0] * words.dtype.itemsize * 8} bits"
            )
        if self.scheme_id is not None and scheme != self.scheme_id:
            raise SchemeMismatchError(f"this index holds {self.scheme_id} stories, got {scheme}")
        if adopt and self.scheme_id is None:
            self.scheme_id = scheme
        return np.asarray(words, dtype=np.uint64), vector

    # -- add / remove ----------------------------------------------------------------------

    def add(self, key: Key, story: StoryVector | Signature, date: dt.datetime | int | None) -> None:
        """Index ``story`` (a non-empty story vector or signature) dated ``date`` (a datetime,
        microseconds since the epoch, or ``None``) under ``key``."""
        k = self._keys.normalise(key)
        date_us = to_us(date)
        old = self._keys.rows.get(k)
        fp, _ = self._fingerprint(story, adopt=False)
        if old is not None:
            prev_fp, prev_date = self._row_of(old)
            if prev_fp.tolist() != fp.tolist() or prev_date != date_us:
                raise ConflictError(
                    f"key {k!r} is already indexed with another story or date; remove it first"
                )
            return
        self._fingerprint(story, adopt=True)
        ident = len(self._keys.keys)
        self._keys.append([k], {k: ident})
        self._reserve_ids(ident + 1)
        if date_us is None:
            where, run = _UNDATED, self._undated
            pos = run.append(fp, 0, ident)
        elif self._main.n == 0 or date_us >= self._main.dates[self._main.n - 1]:
            where, run = _MAIN, self._main
            pos = run.append(fp, date_us, ident)
        else:
            where, run = _BUFFER, self._buffer
            pos = run.append(fp, date_us, ident)
        self._where[ident] = where
        self._pos[ident] = pos
        if self._buffer.n >= self.config.buffer_size:
            self._merge()

    def _reserve_ids(self, n: int) -> None:
        cap = self._where.shape[0]
        if n <= cap:
            return
        cap = max(n, 2 * cap)
        where = np.zeros(cap, dtype=np.int8)
        pos = np.zeros(cap, dtype=np.int64)
        where[: self._where.shape[0]] = self._where
        pos[: self._pos.shape[0]] = self._pos
        self._where, self._pos = where, pos

    def _row_of(self, ident: int) -> tuple[U64, int | None]:
        where = int(self._where[ident])
        pos = int(self._pos[ident])
        run = self._runs[where]
        date = None if where == _UNDATED else int(run.dates[pos])
        return run.fps[pos].copy(), date

    def get(self, key: Key) -> tuple[U64, int | None]:
        """The fingerprint words and date (microseconds or ``None``) stored under ``key``."""
        return self._row_of(self._keys.row(key))

    def remove(self, key: Key) -> None:
        """Remove ``key``; ``NotFoundError`` when it is not indexed."""
        ident = self._keys.row(key)
        run = self._runs[int(self._where[ident])]
        run.alive[int(self._pos[ident])] = False
        self._keys.drop(ident)
        self._dead += 1
        if self._dead > max(self.config.buffer_size, len(self._keys)):
            self.compact()

    def _merge(self) -> None:
        """Merge the buffer into the date-sorted rows, dropping removed rows of both."""
        main, buf = self._main, self._buffer
        keep_m, keep_b = main.live(), buf.live()
        fps = np.concatenate([main.fps[: main.n][keep_m], buf.fps[: buf.n][keep_b]])
        dates = np.concatenate([main.dates[: main.n][keep_m], buf.dates[: buf.n][keep_b]])
        ids = np.concatenate([main.ids[: main.n][keep_m], buf.ids[: buf.n][keep_b]])
        order = np.lexsort((ids, dates))
        main.replace(fps[order], dates[order], ids[order])
        buf.replace(fps[:0], dates[:0], ids[:0])
        self._where[main.ids[: main.n]] = _MAIN
        self._pos[main.ids[: main.n]] = np.arange(main.n, dtype=np.int64)

    def compact(self) -> None:
        """Merge the buffer and drop removed rows and keys (same content, same answers)."""
        self._merge()
        und = self._undated
        keep = und.live()
        und.replace(und.fps[: und.n][keep], und.dates[: und.n][keep], und.ids[: und.n][keep])
        if self._dead:
            alive_ids = np.array([k is not None for k in self._keys.keys], dtype=np.bool_)
            renumber = np.cumsum(alive_ids, dtype=np.int64) - 1
            self._keys.compact()
            for run in self._runs:
                run.ids[: run.n] = renumber[run.ids[: run.n]]
            self._where = np.zeros(max(1024, len(self._keys)), dtype=np.int8)
            self._pos = np.zeros(self._where.shape[0], dtype=np.int64)
            for code, run in enumerate(self._runs):
                self._where[run.ids[: run.n]] = code
                self._pos[run.ids[: run.n]] = np.arange(run.n, dtype=np.int64)
            self._dead = 0

    # -- queries ---------------------------------------------------------------------------

    def nearest(
        self,
        query: StoryVector | Signature,
        k: int | None = 20,
        since: dt.datetime | int | None = None,
        until: dt.datetime | int | None = None,
        *,
        min_similarity: float = -1.0,
        exclude: Iterable[Key] = (),
    ) -> list[StoryHit]:
        """The ``k`` stored stories most similar to ``query`` dated in ``[since, until]``
        (``k=None``: all of them), best first; only those with ``similarity >=
        min_similarity``; never a key of ``exclude``.

        A window bound of ``None`` is open; undated articles match only when both are
        ``None``.  An empty query vector raises ``InputError``.
        """
        if k is not None:
            check_int("k", k, low=0, high=1 << 40)
        check_range("min_similarity", min_similarity, low=-1.0, high=1.0)
        fp, vector = self._fingerprint(query, adopt=False)
        lo_us, hi_us = to_us(since), to_us(until)
        if lo_us is not None and hi_us is not None and hi_us < lo_us:
            raise ConfigError(f"empty window: until ({until}) is before since ({since})")
        excluded = {self._keys.normalise(x) for x in exclude}
        want = None if k is None else k + len(excluded)
        pos, score, dist, codes = self._scan(fp, vector, lo_us, hi_us, min_similarity, want)
        ids = np.empty(pos.shape[0], dtype=np.int64)
        dates = np.empty(pos.shape[0], dtype=np.int64)
        for code, run in enumerate(self._runs):
            sel = codes == code
            ids[sel] = run.ids[pos[sel]]
            dates[sel] = run.dates[pos[sel]]
        if want is not None and want < ids.shape[0]:
            # Top ``want`` by (score desc, id asc): partition on score, keep the ties.
            cut = np.partition(-score, want - 1)[want - 1]
            keep = -score <= cut
            ids, score, dist, codes, dates = (
                ids[keep],
                score[keep],
                dist[keep],
                codes[keep],
                dates[keep],
            )
        order = np.lexsort((ids, -score))
        hits: list[StoryHit] = []
        keys = self._keys.keys
        for i in order.tolist():
            key = keys[int(ids[i])]
            if key is None or key in excluded:
                continue
            date = None if codes[i] == _UNDATED else int(dates[i])
            similarity = min(1.0, max(-1.0, float(score[i])))
            hits.append(StoryHit(key, similarity, int(dist[i]), date))
            if k is not None and len(hits) >= k:
                break
        return hits

    def within(
        self,
        query: StoryVector | Signature,
        since: dt.datetime | int | None,
        until: dt.datetime | int | None,
        *,
        min_similarity: float = -1.0,
    ) -> tuple[npt.NDArray[Any], npt.NDArray[np.float64], I64]:
        """Every stored story dated in ``[since, until]`` with ``similarity >=
        min_similarity``, as arrays ``(keys, similarities, dates)``, most similar first
        (ties by insertion order): :meth:`nearest` with ``k=None`` without a Python object
        per hit (keys: an int64 array for integer keys, an object array for string keys;
        undated stories only when both bounds are ``None``, with date ``-2**63``)."""
        check_range("min_similarity", min_similarity, low=-1.0, high=1.0)
        fp, vector = self._fingerprint(query, adopt=False)
        lo_us, hi_us = to_us(since), to_us(until)
        pos, score, _, codes = self._scan(fp, vector, lo_us, hi_us, min_similarity)
        ids = np.empty(pos.shape[0], dtype=np.int64)
        dates = np.empty(pos.shape[0], dtype=np.int64)
        for code, run in enumerate(self._runs):
            sel = codes == code
            ids[sel] = run.ids[pos[sel]]
            dates[sel] = run.dates[pos[sel]] if code != _UNDATED else _I64_MIN
        order = np.lexsort((ids, -score))
        ids, score, dates = ids[order], np.clip(score[order], -1.0, 1.0), dates[order]
        if self._keys.kind == "str":
            table = self._keys.keys
            keys: npt.NDArray[Any] = np.array([table[i] for i in ids.tolist()], dtype=object)
        else:
            keys = self._keys.key_array(ids)
        return keys, score, dates

    def _scan(
        self,
        fp: U64,
        vector: StoryVector | None,
        lo_us: int | None,
        hi_us: int | None,
        min_similarity: float,
        want: int | None = None,
    ) -> tuple[I64, npt.NDArray[np.float64], I64, npt.NDArray[np.int8]]:
        """Positions, scores, distances and run codes of the rows of the window scoring at
        least ``min_similarity``; with ``want``, only a superset of the ``want`` best (every
        row of them, ties included) rather than all."""
        from neardup.index import _story_kernels as kern

        asymmetric = vector is not None
        if vector is not None:
            table = kern.byte_table(np.ascontiguousarray(vector.values, dtype=np.float32))
        else:
            table = np.zeros((1, 256), dtype=np.float32)
        since = _I64_MIN if lo_us is None else lo_us
        until = _I64_MAX if hi_us is None else hi_us
        # The running smallest of the best ``want`` scores, shared by the spans scanned.
        best = np.full(want if want else 0, -np.inf, dtype=np.float64)
        parts = []
        main = self._main
        dates = main.dates[: main.n]
        lo = int(np.searchsorted(dates, since, "left"))
        hi = int(np.searchsorted(dates, until, "right"))
        spans = [(_MAIN, main, lo, hi, False), (_BUFFER, self._buffer, 0, self._buffer.n, True)]
        if lo_us is None and hi_us is None:
            spans.append((_UNDATED, self._undated, 0, self._undated.n, False))
        if want and self.config.candidates and hi - lo > 2 * self.config.candidates:
            # Approximate stage: the main span's nearest rows on a sub-fingerprint only.
            spans.pop(0)
            parts.append(self._survivors(fp, table, asymmetric, min_similarity, best, lo, hi))
        for code, run, a, b, check in spans:
            size = max(b - a, 0)
            out_pos = np.empty(size, dtype=np.int64)
            out_score = np.empty(size, dtype=np.float64)
            out_dist = np.empty(size, dtype=np.int64)
            n = kern.scan(
                run.fps,
                run.dates,
                run.alive,
                a,
                b,
                check,
                since,
                until,
                fp,
                table,
                asymmetric,
                min_similarity,
                best,
                out_pos,
                out_score,
                out_dist,
            )
            parts.append((out_pos[:n], out_score[:n], out_dist[:n], np.full(n, code, np.int8)))
        return (
            np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]),
            np.concatenate([p[3] for p in parts]),
        )

    def _survivors(
        self,
        fp: U64,
        table: npt.NDArray[np.float32],
        asymmetric: bool,
        min_similarity: float,
        best: npt.NDArray[np.float64],
        lo: int,
        hi: int,
    ) -> tuple[I64, npt.NDArray[np.float64], I64, npt.NDArray[np.int8]]:
        """Score the rows of ``[lo, hi)`` of the main run whose sub-fingerprint distance is at
        most the smallest cut keeping ``candidates`` rows (every row at the cut: the choice
        depends on the data only, never on scan order)."""
        from neardup.index import _story_kernels as kern

        words = self.config.prefilter_words or self._words
        partial = np.empty(hi - lo, dtype=np.uint8)
        main = self._main
        hist = kern.partial_distances(main.fps, main.alive, lo, hi, fp, words, partial)
        cum = np.cumsum(hist[:-1])
        cut = int(np.searchsorted(cum, self.config.candidates, "left"))
        size = int(cum[min(cut, cum.shape[0] - 1)])
        out_pos = np.empty(size, dtype=np.int64)
        out_score = np.empty(size, dtype=np.float64)
        out_dist = np.empty(size, dtype=np.int64)
        n = kern.scan_survivors(
            main.fps,
            lo,
            partial,
            cut,
            fp,
            table,
            asymmetric,
            min_similarity,
            best,
            out_pos,
            out_score,
            out_dist,
        )
        return out_pos[:n], out_score[:n], out_dist[:n], np.full(n, _MAIN, np.int8)

    # -- persistence -----------------------------------------------------------------------

    def state(self) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
        """``(meta, arrays)`` that :meth:`from_state` restores exactly (compacts first), for
        :meth:`save` and for a caller's own checkpoint."""
        self.compact()
        n = len(self._keys)
        fps = np.zeros((n, self._words), dtype=np.uint64)
        dates = np.zeros(n, dtype=np.int64)
        dated = np.zeros(n, dtype=np.bool_)
        for code, run in enumerate(self._runs):
            ids = run.ids[: run.n]
            fps[ids] = run.fps[: run.n]
            dates[ids] = run.dates[: run.n]
            dated[ids] = code != _UNDATED
        meta = {
            "config": self.config.to_dict(),
            "key_kind": self._keys.kind,
            "rows": n,
            "scheme_id": self.scheme_id,
        }
        arrays: dict[str, npt.NDArray[Any]] = {
            "fingerprints": fps,
            "dates": dates,
            "dated": dated.astype(np.uint8),
            **self._keys.to_arrays(),
        }
        return meta, arrays

    @classmethod
    def from_state(
        cls, meta: dict[str, Any], arrays: dict[str, npt.NDArray[Any]], where: str = "state"
    ) -> StoryIndex:
        """The index :meth:`state` described; ``StoreError`` when the parts disagree."""
        try:
            index = cls(StoryIndexConfig(**meta["config"]))
            n = int(meta["rows"])
            fps = arrays["fingerprints"].astype(np.uint64)
            dates = arrays["dates"].astype(np.int64)
            dated = arrays["dated"].astype(np.bool_)
            keys = KeyMap.from_arrays(meta.get("key_kind"), arrays)
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise StoreError(f"{where}: malformed story index metadata: {exc}") from exc
        if fps.shape != (n, index._words) or dates.shape != (n,) or dated.shape != (n,):
            raise StoreError(f"{where}: array shapes disagree with the metadata")
        if len(keys) != n:
            raise StoreError(f"{where}: {len(keys)} keys for {n} stories")
        index._keys = keys
        index.scheme_id = meta.get("scheme_id")
        index._reserve_ids(n)
        ids = np.arange(n, dtype=np.int64)
        order = np.lexsort((ids[dated], dates[dated]))
        index._main.replace(fps[dated][order], dates[dated][order], ids[dated][order])
        und = ~dated
        index._undated.replace(fps[und], np.zeros(int(und.sum()), np.int64), ids[und])
        for code, run in enumerate(index._runs):
            index._where[run.ids[: run.n]] = code
            index._pos[run.ids[: run.n]] = np.arange(run.n, dtype=np.int64)
        return index

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to ``path`` (compacts it first; atomic replace)."""
        meta, arrays = self.state()
        write_index_file(path, _MAGIC, meta, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> StoryIndex:
        """Read an index written by :meth:`save`; ``StoreError`` if the file is not one."""
        meta, arrays = read_index_file(path, _MAGIC)
        return cls.from_state(meta, arrays, str(path))

    def snapshot(self) -> list[tuple[Key, tuple[int, ...], int | None]]:
        """``(key, fingerprint words, date)`` of every story, in insertion order (for
        consistency checks)."""
        return [(k, tuple(self.get(k)[0].tolist()), self.get(k)[1]) for k in self.keys()]
