"""The streaming origin detector (seed 004): documents in time order -> origin reports.

:class:`OriginDetector` runs the paper's three phases on each document in turn (Section 2):
select fingerprints (:mod:`.select`), hash them into the table (:mod:`.table`, evicting by
:mod:`.evict`), estimate the origin of every selected fingerprint (:mod:`.estimate`), and for
lucky eviction feed the estimated copied blocks back into the lucky scores.  The optional
edge extension (``edge_extension``, not in the paper) widens only the copied *tokens*; the
shingles' origins, the dominant origin and the lucky scores are computed before it.  Each document
is the query document for the ones before it and then joins the set S (the paper's
preprocessing and query steps are the same pass in a stream).

Text: tokens are ``neardup.text.tokenize`` with :data:`TEXT_CONFIG` (lower-cased, NFKC,
*no* stemming and *no* stop-word removal, numbers kept) so every alphanumeric term counts
as in the paper ("alphanumeric sequences", Section 3.1), and offsets map every result back
to the original text.  Token hashes are ``xxh3_64`` with ``config.seed``.

Memory: the table's arrays (fixed, <= ``memory_bytes``) plus the origin ids.  By default an
in-memory registry keeps the id of every document that still has at least one shingle in
the table (reference-counted; at most one id per table entry, about 200 bytes an id); with
``id_log=PATH`` the ids go to an append-only file instead (:mod:`.idlog`, the paper's
"fingerprint of the origin" resolved on disk) and memory is the table plus a constant.
When ``reject_repeated_ids`` is on, the ids seen are kept as 64-bit hashes
(:mod:`.seen`): 8 bytes a document, the one part of memory that grows with the stream.

Reference mode (``OriginConfig.reference()``): All, unlimited memory, NB: the exact origin
of every shingle, the ground truth the paper measures against.

Save/reload: :meth:`OriginDetector.save` writes the table, registry, counters and seen ids
to one ``.npz`` file; :meth:`OriginDetector.load` continues the stream exactly (tested:
split-and-reload gives the same output as one run).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.detect.origin.config import OriginConfig
from neardup.detect.origin.estimate import ESTIMATION_CODES
from neardup.detect.origin.idlog import IdLog
from neardup.detect.origin.kernel import (
    bucket_document,
    conclude,
    origins_and_cuts,
    probe_facts,
)
from neardup.detect.origin.persist import load_state, save_state
from neardup.detect.origin.records import OriginReport, Segment, ShingleOrigins
from neardup.detect.origin.seen import SeenIds
from neardup.detect.origin.select import Selection, all_shingles, select, select_positions
from neardup.detect.origin.table import BucketTable, Probe, UnlimitedTable, make_table
from neardup.errors import ConflictError, InputError, StoreError
from neardup.similarity.spans import DocumentTokens, document_tokens
from neardup.text import TextConfig, Tokens, ensure_text, tokenize

__all__ = ["TEXT_CONFIG", "DocResult", "OriginDetector"]

_NO_MASK = np.zeros(0, dtype=np.bool_)
TEXT_CONFIG = TextConfig(stem=False, drop_stop_words=False, min_token_length=1, numbers="keep")
_STATE_VERSION = 3  # 3: checksummed, adaptive tables (2: no checksum; 1: ids as JSON)

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]


@dataclasses.dataclass(frozen=True, slots=True)
class DocResult:
    """The engine's raw result for one document (ordinals, not ids; no text needed)."""

    ordinal: int
    id: str
    n_tokens: int
    selection: Selection
    origins: I64  # estimated origin ordinal of each selected fingerprint
    token_origin: I64  # per token: origin ordinal of a copied cover, or -1 (fresh)
    dominant: int | None
    most_copied: int
    names: dict[int, str]  # ordinal -> id for every origin in ``origins``
    found: npt.NDArray[np.bool_]  # which selected fingerprints were found in the table
    cuts: I64  # token indices where segments start, then the token count

    @property
    def fresh_tokens(self) -> int:
        """Tokens covered by no copied fingerprint."""
        return int(np.count_nonzero(self.token_origin < 0))

    def name(self, ordinal: int | None) -> str | None:
        """The id of an origin ordinal."""
        return None if ordinal is None else self.names[ordinal]


class OriginDetector:
    """Streaming origin detection over time-ordered documents in a fixed memory budget."""

    def __init__(
        self,
        config: OriginConfig | None = None,
        *,
        reject_repeated_ids: bool = True,
        id_log: str | os.PathLike[str] | None = None,
    ) -> None:
        self.config = config or OriginConfig()
        self.table: BucketTable | UnlimitedTable = make_table(self.config)
        self._method = ESTIMATION_CODES[self.config.estimation]
        self._lucky = self.config.eviction == "lucky" and self.config.memory_bytes is not None
        self._next = 0
        self._registry: dict[int, list[Any]] = {}  # ordinal -> [id, stored entries]
        self._seen: SeenIds | None = SeenIds() if reject_repeated_ids else None
        self.last_date: str | None = None  # kept for callers that enforce date order
        # the first document whose shingles did not all stay in the table: every answer
        # before it is exact (the reference mode's); None while nothing was ever lost
        self.first_loss: int | None = None
        self._ids: IdLog | None = None
        if id_log is not None:
            self._ids = IdLog(id_log)
            if len(self._ids):
                self._ids.close()
                raise StoreError(
                    f"id log {id_log} already holds {len(self._ids)} ids: load the state saved"
                    " with it (OriginDetector.load) or use a new path"
                )

    @property
    def documents_processed(self) -> int:
        """How many documents the stream has seen."""
        return self._next

    @property
    def registry_size(self) -> int:
        """Ids held because their documents still have shingles in the table."""
        return len(self._registry)

    def tokenize(self, text: str) -> Tokens:
        """The tokens origin detection works on (:data:`TEXT_CONFIG`)."""
        return tokenize(ensure_text(text), TEXT_CONFIG)

    def process(self, doc_id: str, text: str) -> OriginReport:
        """Process the next document of the stream and report the origins of its text."""
        tokens = document_tokens(ensure_text(text), TEXT_CONFIG, self.config.seed)
        return self.report(self.process_hashes(doc_id, tokens.hashes), tokens)

    def process_many(self, docs: Iterable[tuple[str, str]]) -> list[OriginReport]:
        """:meth:`process` over ``(id, text)`` pairs in order."""
        return [self.process(doc_id, text) for doc_id, text in docs]

    def process_hashes(self, doc_id: str, token_hashes: U64) -> DocResult:
        """Process a document given its token hashes (the evaluation's fast path)."""
        if not isinstance(doc_id, str) or not doc_id:
            raise InputError(f"document id must be a non-empty string, got {doc_id!r}")
        if self._seen is not None and not self._seen.add(doc_id):
            raise ConflictError(f"document id {doc_id!r} was already processed")
        own = self._next
        self._next += 1
        if self._ids is not None:
            self._ids.append(doc_id)
        return self._document(own, doc_id, token_hashes, readonly=False)

    def peek(self, text: str, doc_id: str = "query") -> OriginReport:
        """What the stream says about ``text`` now, as if it were the next document, without
        adding it: the table, counters and ids are left exactly as they were (a pasted text
        on the service's page).  Shingles repeated inside ``text`` count as new."""
        tokens = document_tokens(ensure_text(text), TEXT_CONFIG, self.config.seed)
        return self.report(self._document(self._next, doc_id, tokens.hashes, True), tokens)

    def _document(self, own: int, doc_id: str, token_hashes: U64, readonly: bool) -> DocResult:
        th = np.ascontiguousarray(token_hashes, dtype=np.uint64)
        cfg = self.config
        if cfg.adaptive:
            # every shingle is looked up and may be stored; the selected ones are anchors
            k = cfg.shingle_width
            fps = all_shingles(th, k)
            starts = np.arange(fps.shape[0], dtype=np.int64)
            ends = starts + k
            anchors = select_positions(th, fps, cfg)
            sel = Selection(fps, starts, ends, fps.shape[0])
        else:
            sel = select(th, cfg)
            fps, starts, ends = sel.fingerprints, sel.starts, sel.ends
            anchors = np.arange(fps.shape[0], dtype=np.int64)
        insert = self._insert_mask(fps)
        table = self.table
        n = int(th.shape[0])
        if isinstance(table, BucketTable):
            got = bucket_document(
                own, fps, starts, ends, anchors, cfg.adaptive, n,
                _NO_MASK if insert is None else insert, table.nbuckets, table.bucket_size,
                table.tag_hi, table.tag_lo, table.origin, table.offset, table.prev, table.next,
                table.score, table.fill, table.loose, table.lost, table.rng, table.policy,
                cfg.copycount_saturated, cfg.lucky_limit, self._method, cfg.bridge_limit,
                cfg.bridge_tolerance, cfg.edge_extension, cfg.lucky_every, self._lucky, readonly,
            )  # fmt: skip
            est, marked, tok, found, evicted, inserted, dropped, best, best_count, second = got[:10]
            distinct = got[10]
        else:
            is_anchor, offs, pb, nb = probe_facts(fps, anchors, cfg.adaptive)
            facts = Probe(anchor=is_anchor if cfg.adaptive else None, offsets=offs, prev=pb,
                          next=nb)  # fmt: skip
            hits, evicted = table.probe(fps, own, insert, facts, readonly)
            found, inserted, dropped = hits.found, table.last_inserted, 0
            est, marked, tok, _, best, best_count, second, distinct = conclude(
                own, fps, starts, ends, anchors, n, found, hits.origin, hits.offset, hits.prev,
                hits.next, hits.maybe_lost, self._method, cfg.bridge_limit,
                cfg.bridge_tolerance, cfg.edge_extension, cfg.lucky_every,
            )  # fmt: skip
        others, cuts = origins_and_cuts(own, est, marked, tok)
        names = {own: doc_id}
        for o in others.tolist():
            names[o] = self._registry[o][0] if self._ids is None else self._ids.get(o)
        if not readonly:
            self._account(own, doc_id, inserted, evicted)
            if self.first_loss is None and (dropped or evicted.shape[0]):
                self.first_loss = own
        dom = int(best) if distinct == 1 or 10 * best_count >= 11 * second else None
        return DocResult(own, doc_id, n, sel, est, tok, dom, int(best), names, found, cuts)

    def _insert_mask(self, fps: U64) -> npt.NDArray[np.bool_] | None:
        """Which selected fingerprints may be stored (``insert_modulo``; None = all)."""
        r = self.config.insert_modulo
        if r == 1:
            return None
        low = (fps >> np.uint64(16)) & np.uint64(0xFFFF)
        return np.asarray(low % np.uint64(r) == 0)

    def close(self) -> None:
        """Flush the id log, if any (the in-memory state stays usable for save)."""
        if self._ids is not None:
            self._ids.flush()

    def close_log(self) -> None:
        """Flush and close the id log's files, if any: the detector can neither process
        another document nor save after this (for callers that delete the log)."""
        if self._ids is not None:
            self._ids.close()

    def _account(self, own: int, doc_id: str, inserted: int, evicted: I64) -> None:
        """Reference counts of stored entries per origin, so ids of evicted docs are freed."""
        if self._ids is not None:
            return  # ids live on disk
        if inserted:
            self._registry[own] = [doc_id, inserted]
        if evicted.shape[0]:
            for o, c in Counter(evicted.tolist()).items():
                entry = self._registry.get(o)
                if entry is None:
                    continue
                entry[1] -= c
                if entry[1] <= 0:
                    del self._registry[o]

    def report(self, result: DocResult, tokens: Tokens | DocumentTokens) -> OriginReport:
        """Turn a :class:`DocResult` into an :class:`OriginReport` with character spans
        (``tokens``: the document's tokens, from :meth:`tokenize` or
        :func:`~neardup.detect.origin.spans.document_tokens`)."""
        tok = result.token_origin
        n = tok.shape[0]
        if n != len(tokens):
            raise InputError("tokens do not belong to this result")
        segments: list[Segment] = []
        if n:
            bounds = result.cuts.tolist()
            starts = tokens.starts
            ends = tokens.ends
            for a, b in itertools.pairwise(bounds):
                o = int(tok[a])
                origin = result.names[o] if o >= 0 else result.id
                segments.append(Segment(int(starts[a]), int(ends[b - 1]), origin, o >= 0))
        fresh = result.fresh_tokens
        sel = result.selection
        shingles = ShingleOrigins(sel.starts, sel.ends, result.origins, result.names)
        return OriginReport(
            id=result.id,
            tokens=n,
            fresh_tokens=fresh,
            copied_fraction=(n - fresh) / n if n else 0.0,
            dominant_origin=result.name(result.dominant),
            most_copied_origin=result.names[result.most_copied],
            segments=tuple(segments),
            selected_shingles=len(sel),
            total_shingles=sel.total_shingles,
            shingles=shingles,
        )

    # --- persistence -------------------------------------------------------------------

    def state_arrays(self) -> dict[str, Any]:
        """The whole state as named arrays (what :meth:`save` writes)."""
        meta = {
            "version": _STATE_VERSION,
            "config": self.config.to_dict(),
            "next": self._next,
            "last_date": self.last_date,
            "first_loss": self.first_loss,
            "reject_repeated_ids": self._seen is not None,
            "id_log": None if self._ids is None else str(self._ids.path.resolve()),
        }
        if self._ids is not None:
            self._ids.flush()
        reg_ord = np.fromiter(self._registry.keys(), dtype=np.int64, count=len(self._registry))
        reg_cnt = np.array([v[1] for v in self._registry.values()], dtype=np.int64)
        reg_ids = json.dumps([v[0] for v in self._registry.values()])
        arrays: dict[str, Any] = {f"table_{k}": v for k, v in self.table.arrays().items()}
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        arrays["registry_ordinals"] = reg_ord
        arrays["registry_counts"] = reg_cnt
        arrays["registry_ids"] = np.frombuffer(reg_ids.encode(), dtype=np.uint8)
        arrays["seen_hashes"] = (
            self._seen.to_array() if self._seen is not None else np.zeros(0, dtype=np.uint64)
        )
        return arrays

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the whole state to ``path`` (an ``.npz`` file) atomically, under a
        temporary name unique to the process (:func:`~.persist.save_state`)."""
        save_state(path, self.state_arrays())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> OriginDetector:
        """Restore a detector saved by :meth:`save`; the stream continues where it stopped.

        A damaged, truncated, empty or foreign file raises ``StoreError`` saying so; it is
        never partly used."""
        return cls.from_state(load_state(path), str(path))

    @classmethod
    def from_state(cls, files: dict[str, Any], source: str = "state") -> OriginDetector:
        """A detector from :meth:`state_arrays` (``source`` names it in error messages)."""
        try:
            meta = json.loads(files["meta"].tobytes())
            if meta.get("version") != _STATE_VERSION:
                raise StoreError(
                    f"origin state {source} has version {meta.get('version')}, this neardup"
                    f" reads version {_STATE_VERSION}: rebuild it"
                )
            config = OriginConfig(**meta["config"])
            ids = json.loads(files["registry_ids"].tobytes())
            seen = SeenIds(files["seen_hashes"].astype(np.uint64))
            ordinals = files["registry_ordinals"].tolist()
            counts = files["registry_counts"].tolist()
            registry: dict[int, list[Any]] = {
                int(o): [str(i), int(c)] for o, i, c in zip(ordinals, ids, counts, strict=True)
            }
            nxt = int(meta["next"])
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            raise StoreError(f"origin state {source} is malformed: {exc}") from exc
        if nxt < 0 or any(not 0 <= o < nxt or int(v[1]) <= 0 for o, v in registry.items()):
            raise StoreError(f"origin state {source} is inconsistent (registry vs counter)")
        self = cls(config, reject_repeated_ids=bool(meta["reject_repeated_ids"]))
        if meta.get("id_log"):
            self._ids = IdLog(meta["id_log"])
            self._ids.truncate(nxt)  # drop ids logged after the save
        table_arrays = {k[6:]: v for k, v in files.items() if k.startswith("table_")}
        self.table = make_table(config, table_arrays)
        self._next = nxt
        self.last_date = meta.get("last_date")
        first_loss = meta.get("first_loss")
        self.first_loss = None if first_loss is None else int(first_loss)
        self._registry = registry
        if self._seen is not None:
            self._seen = seen
        return self
