"""Result-set dedup of stored articles by id: :class:`StoredResultSets`.

:func:`neardup.detect.resultset.dedup_result_set` takes signatures; a search over a store
holds ids.  This detector turns each id into its result-set signature (:func:`stored_sketch`:
the stored signature when it is of the scheme asked, else signed from the stored text) and
keeps those signatures in a bounded cache per scheme, so a repeated id costs one dict access.
It is what :meth:`neardup.api.NewsIndex.dedup` and ``POST /v1/dedup`` answer with.

Guarantees:

* **Same answer as the signatures'**: ``dedup(ids, threshold)`` equals
  ``dedup_result_set([stored_sketch(row, scheme) for each id], threshold)``; the cache changes
  the time, never the answer (a signature is a pure function of the stored text, and ids are
  immutable, so an entry never goes stale and every process computes the same bytes).
* **Bounded memory**: at most ``capacity`` signatures per scheme, evicted first in, first
  out (a plain dict in insertion order: no bookkeeping on the hot path); an evicted one is
  signed again on its next use.
* **Threads**: :meth:`StoredResultSets.dedup` reads the store, so it runs where the store
  may be used (its owner serialises it); :meth:`StoredResultSets.dedup_cached` never touches
  the store and only reads the cache (single dict operations, atomic under the GIL), so any
  thread may call it while another one fills the cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from neardup.config import check_int
from neardup.detect.resultset import dedup_result_set
from neardup.errors import InputError, InputTypeError, NotFoundError
from neardup.records import Article
from neardup.sketch import Signature, sign
from neardup.store import ArticleRow

__all__ = ["SignatureCache", "StoredResultSets", "scheme_of", "stored_sketch"]


class _Rows(Protocol):
    """What the detector reads from a store."""

    def get_many(self, article_ids: Sequence[str]) -> list[ArticleRow]: ...


def scheme_of(threshold: float | None) -> str:
    """The result-set scheme a request uses: ``"coverage"`` (the near-duplicate rule) without
    a threshold, ``"sentences"`` (seed 000's sentence sketch) with one."""
    return "coverage" if threshold is None else "sentences"


def stored_sketch(row: ArticleRow, scheme: str) -> Signature:
    """The result-set signature of a stored article (``scheme``: ``"coverage"`` or
    ``"sentences"``): its stored signature when it is of that scheme, else signed from its
    stored text.  The one place a stored article becomes a result-set signature."""
    try:
        stored = Signature.from_bytes(row.signature)
        if stored.scheme == scheme:
            return stored
    except InputError:
        pass
    if row.text is None:
        raise NotFoundError(f"stored article {row.id!r} has no text to sign")
    return sign(row.text, scheme)


class SignatureCache:
    """Signatures by id, bounded to ``capacity`` entries, evicted first in, first out."""

    def __init__(self, capacity: int) -> None:
        check_int("capacity", capacity, low=0)
        self.capacity = capacity
        self._items: dict[str, Signature] = {}

    def __len__(self) -> int:
        return len(self._items)

    def lookup(self, keys: Sequence[str]) -> list[Signature | None]:
        """The cached signature (or ``None``) of each key."""
        get = self._items.get
        return [get(k) for k in keys]

    def put(self, key: str, value: Signature) -> None:
        if self.capacity <= 0:
            return
        self._items[key] = value
        while len(self._items) > self.capacity:
            del self._items[next(iter(self._items))]


def _dedup(signatures: Sequence[Signature], threshold: float | None) -> list[int]:
    if threshold is None:
        return dedup_result_set(signatures)
    return dedup_result_set(signatures, threshold)


def _unknown(ids: Sequence[str]) -> NotFoundError:
    shown = ", ".join(repr(i) for i in ids[:5])
    more = f" and {len(ids) - 5} more" if len(ids) > 5 else ""
    return NotFoundError(f"no stored article with id {shown}{more}")


class StoredResultSets:
    """Dedup of ranked result sets whose items are stored ids (or texts signed on the spot).

    ``store``: anything with ``get_many(ids) -> rows`` (a :class:`neardup.store.Store`);
    ``capacity``: signatures kept per scheme (0: none).
    """

    def __init__(self, store: _Rows, capacity: int) -> None:
        self._store = store
        self._caches = {scheme: SignatureCache(capacity) for scheme in ("coverage", "sentences")}

    @property
    def cached(self) -> int:
        """Signatures held in memory, all schemes together."""
        return sum(len(c) for c in self._caches.values())

    def signatures(self, ids: Sequence[str], scheme: str) -> list[Signature]:
        """The ``scheme`` signature of each stored id, in order; ``NotFoundError`` naming
        the unknown ids (the first five)."""
        cache = self._caches[scheme]
        found = cache.lookup(ids)
        missing = [doc_id for doc_id, sig in zip(ids, found, strict=True) if sig is None]
        if not missing:
            return found  # type: ignore[return-value]  # no None left
        rows = {r.id: r for r in self._store.get_many(sorted(set(missing)))}
        unknown = [i for i in missing if i not in rows]
        if unknown:
            raise _unknown(unknown)
        fresh: dict[str, Signature] = {}
        for doc_id, row in rows.items():
            fresh[doc_id] = stored_sketch(row, scheme)
            cache.put(doc_id, fresh[doc_id])
        return [sig if sig is not None else fresh[i] for i, sig in zip(ids, found, strict=True)]

    def dedup(self, items: Sequence[str | Article], threshold: float | None = None) -> list[int]:
        """``dedup_result_set`` of the items in ranking order: a string is a stored id, an
        :class:`~neardup.records.Article` is signed from its text now (never stored; its id
        only labels it).  ``threshold``: ``None`` for the near-duplicate rule on coverage
        sketches, else seed 000's sentence sketch at that similarity.  Reads the store."""
        scheme = scheme_of(threshold)
        if isinstance(items, str | bytes):
            raise InputTypeError("items must be a sequence of ids and articles, not one string")
        if all(isinstance(item, str) for item in items):
            signatures = self.signatures(items, scheme)  # type: ignore[arg-type]
        else:
            for n, item in enumerate(items):
                if not isinstance(item, str | Article):
                    raise InputTypeError(
                        f"items[{n}] must be a stored id (str) or an Article, "
                        f"got {type(item).__name__}"
                    )
            stored = iter(self.signatures([i for i in items if isinstance(i, str)], scheme))
            signatures = [
                next(stored) if isinstance(item, str) else sign(item.text, scheme) for item in items
            ]
        return _dedup(signatures, threshold) if signatures else []

    def dedup_cached(self, ids: Sequence[str], threshold: float | None = None) -> list[int] | None:
        """:meth:`dedup` of stored ids answered from the signatures in memory only, or
        ``None`` when one of them is not held.  Never reads the store (module doc)."""
        if isinstance(ids, str | bytes):
            raise InputTypeError("ids must be a sequence of ids, not one string")
        signatures = self._caches[scheme_of(threshold)].lookup(ids)
        if any(sig is None for sig in signatures):
            return None
        return _dedup(signatures, threshold) if signatures else []  # type: ignore[arg-type]
