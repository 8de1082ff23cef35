"""Origin-detection experiments (seed 004, Section 3): DO, TF and ssr on Reuters streams.

* :func:`copy_stream` builds the evaluation stream: the Reuters-21578 wire in time order with,
  after each original and with probability ``copy_rate``, a *copier* document made of
  passages of earlier documents (edited word by word) and novel filler, with its intended
  sources recorded (ground truth of the generator).  A quarter of the copiers re-send a whole
  earlier document with light edits, as wire services do.
* Ground truth is the paper's (Section 3.1): the reference mode (All, unlimited memory) gives
  the origin of every shingle, hence each document's dominant origin (10 % rule) and each
  token's fresh/old label.
* Metrics exactly as Section 3.2 defines them:

  - **ssr**: selected shingles / all shingles of the stream;
  - **DO**: % of query documents (those with a dominant origin) whose dominant origin the
    algorithm identifies, i.e. whose most copied origin under the algorithm's estimated
    shingle origins equals the reference dominant origin;
  - **TF**: % of the query documents' tokens labelled correctly fresh or old.

  Query documents are, as in the paper, the last ``query_docs`` documents that have a
  dominant origin; every earlier document is the set S (it is streamed through the table
  first).
* :func:`run_experiment` runs the paper's grid (Tables 3-10: selection x {Version A = Random
  + NB, Version B = Lucky + BE}, eviction x NB for All and NHs, estimation x {CC, LS} for All
  and NHs) over memory sizes holding 34.2 % down to 0.1 % of all shingles (Table 2's blogs
  fractions, at 18 bytes an entry) and writes markdown tables, JSON and PNG plots.

Run: ``python research/origin_experiments.py --out docs/origin`` (4 memory sizes, about 10
minutes on an idle core; ``--full`` for all 8 sizes of Table 2, ``--quick`` for 2).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import gzip
import json
import math
import platform
import random
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pan13_alignment import render_markdown as render_alignment
from pan13_alignment import run_alignment

from neardup.detect.origin import TEXT_CONFIG, OriginConfig, OriginDetector
from neardup.detect.origin.select import select
from neardup.detect.origin.table import BucketTable
from neardup.errors import ConfigError, InputError
from neardup.evaluation.alignment import AlignmentScore
from neardup.evaluation.metrics import selected_shingle_ratio, token_freshness_score
from neardup.samples import data_folders
from neardup.shingles import hash_forms
from neardup.text import raw_tokens, tokenize

__all__ = [
    "MEMORY_FRACTIONS",
    "Prepared",
    "RunResult",
    "StreamDoc",
    "Truth",
    "copy_stream",
    "ground_truth",
    "load_reuters",
    "memory_for_fraction",
    "prepare",
    "run_config",
    "run_experiment",
]

# Table 2 (blogs): % of all shingles the table holds at 5000 ... 20 MB, plus 50 % (--full).
MEMORY_FRACTIONS = (0.5, 0.342, 0.137, 0.068, 0.033, 0.014, 0.007, 0.003, 0.001)
DEFAULT_FRACTIONS = (0.342, 0.033, 0.003, 0.001)  # the paper's headline points + the smallest
QUICK_FRACTIONS = (0.342, 0.003)
COPY_STREAM_ORIGINALS = 12_000  # Reuters originals the copy stream is built from
_SIZING_ENTRY_BYTES = 18  # the widest entry: the sweep gives every configuration these bytes
MIN_TOKENS = 45  # the paper drops documents under 45 tokens (Section 3.1)

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
BOOL = npt.NDArray[np.bool_]


# --- the copy stream -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class StreamDoc:
    """A document of the evaluation stream; ``sources`` are the generator's intended origins
    (ids of the copied documents, largest passage first), empty for an original."""

    id: str
    text: str
    date: str | None
    sources: tuple[str, ...] = ()


def default_data_dir() -> Path:
    """The first shared data folder that holds Reuters (``$NEARDUP_DATA`` when set)."""
    folders = data_folders()
    return next((f for f in folders if (f / "reuters21578").exists()), folders[0])


def load_reuters(path: Path, limit: int | None = None) -> list[StreamDoc]:
    """The Reuters-21578 documents with text, in their (chronological) file order."""
    out: list[StreamDoc] = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row.get("text"):
                out.append(StreamDoc(str(row["id"]), row["text"], row.get("date")))
            if limit is not None and len(out) >= limit:
                break
    return out


def _edit(words: list[str], rate: float, vocab: Sequence[str], rng: random.Random) -> list[str]:
    """Word-level edits: each word is substituted, deleted or followed by an insertion with
    probability ``rate`` (1/2, 1/4, 1/4)."""
    out: list[str] = []
    for w in words:
        if rng.random() >= rate:
            out.append(w)
            continue
        kind = rng.random()
        if kind < 0.5:
            out.append(rng.choice(vocab))
        elif kind < 0.75:
            continue
        else:
            out.extend((w, rng.choice(vocab)))
    return out


def copy_stream(
    docs: Sequence[StreamDoc],
    *,
    copy_rate: float = 1.5,
    edit_rate: float = 0.02,
    recent: int = 500,
    seed: int = 0,
    recent_share: float = 0.6,
) -> list[StreamDoc]:
    """Interleave ``docs`` with copier documents built from earlier ones (deterministic).

    After each original come ``copy_rate`` copiers on average (the integer part always, the
    fraction with that probability).  A copier is, with probability 1/4, a re-send of one
    earlier document with word edits at
    ``edit_rate``; otherwise 1 to 3 passages of 10 to 80 words of earlier documents (a
    share ``recent_share``, default 60 %, from the ``recent`` last ones, the rest from
    anywhere earlier), each edited at
    ``edit_rate``, between runs of 0 to 30 novel filler words drawn uniformly from the
    stream's vocabulary (so filler 8-grams are new with high probability).
    """
    if not 0.0 <= copy_rate <= 100.0 or not 0.0 <= edit_rate <= 1.0:
        raise ConfigError("copy_rate must be in [0, 100] and edit_rate in [0, 1]")
    if not 0.0 <= recent_share <= 1.0:
        raise ConfigError(f"recent_share must be in [0, 1], got {recent_share!r}")
    rng = random.Random(seed)
    vocab = sorted({w.lower() for d in docs[:3000] for w in raw_tokens(d.text) if w.isalpha()})
    if not vocab:
        raise InputError("copy_stream needs documents with words")
    out: list[StreamDoc] = []
    originals: list[StreamDoc] = []
    n_copies = 0
    for doc in docs:
        out.append(doc)
        originals.append(doc)
        if len(originals) < 2:
            continue
        copies = int(copy_rate) + (rng.random() < copy_rate - int(copy_rate))
        for _ in range(copies):
            n_copies += 1
            out.append(
                _copier(
                    originals,
                    f"copy{n_copies:06d}",
                    doc.date,
                    vocab,
                    rng,
                    edit_rate,
                    recent,
                    recent_share,
                )
            )
    return out


def _copier(
    originals: Sequence[StreamDoc],
    doc_id: str,
    date: str | None,
    vocab: Sequence[str],
    rng: random.Random,
    edit_rate: float,
    recent: int,
    recent_share: float = 0.6,
) -> StreamDoc:
    """One copier document (see :func:`copy_stream`)."""
    parts: list[str] = []
    sources: list[tuple[int, str]] = []
    if rng.random() < 0.25:
        src = originals[rng.randrange(max(0, len(originals) - recent), len(originals))]
        words = _edit(src.text.split(), edit_rate, vocab, rng)
        parts.append(" ".join(words))
        sources.append((len(words), src.id))
    else:
        for _ in range(rng.choice((1, 1, 2, 3))):
            parts.append(" ".join(rng.choice(vocab) for _ in range(rng.randrange(0, 31))))
            if rng.random() < recent_share:
                src = originals[rng.randrange(max(0, len(originals) - recent), len(originals))]
            else:
                src = originals[rng.randrange(len(originals))]
            words = src.text.split()
            length = rng.randrange(10, 81)
            start = rng.randrange(max(1, len(words) - length + 1))
            passage = _edit(words[start : start + length], edit_rate, vocab, rng)
            parts.append(" ".join(passage))
            sources.append((len(passage), src.id))
        parts.append(" ".join(rng.choice(vocab) for _ in range(rng.randrange(0, 31))))
    sources.sort(key=lambda s: -s[0])
    ids = tuple(dict.fromkeys(s for _, s in sources))
    text = "\n".join(p for p in parts if p)
    return StreamDoc(doc_id, text, date, ids)


# --- prepared stream, ground truth, metrics ---------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Prepared:
    """A stream tokenised once: token hashes per document and the shingle count."""

    ids: tuple[str, ...]
    hashes: tuple[U64, ...]
    total_shingles: int
    total_tokens: int


def prepare(stream: Sequence[StreamDoc], k: int = 8, min_tokens: int = MIN_TOKENS) -> Prepared:
    """Tokenise (:data:`TEXT_CONFIG`) and hash; documents under ``min_tokens`` are dropped."""
    ids: list[str] = []
    hashes: list[U64] = []
    for doc in stream:
        forms = tokenize(doc.text, TEXT_CONFIG).forms
        if len(forms) < min_tokens:
            continue
        ids.append(doc.id)
        hashes.append(hash_forms(forms, 0))
    total = sum(max(h.shape[0] - k + 1, 0) for h in hashes)
    return Prepared(tuple(ids), tuple(hashes), total, sum(h.shape[0] for h in hashes))


@dataclasses.dataclass(frozen=True)
class Truth:
    """Reference-mode labels: dominant origin per document (-1: none) and old tokens."""

    dominant: I64
    own_dominant: BOOL
    token_old: BOOL  # all documents' tokens concatenated
    token_offsets: I64  # document i's tokens are token_old[offsets[i]:offsets[i + 1]]
    query: I64  # indices of the query documents
    shingle_origin: I64  # reference origin of every shingle, documents concatenated
    shingle_offsets: I64  # document i's shingles are shingle_origin[so[i]:so[i + 1]]
    shingle_copy_ratio: float
    mean_copied_block: float
    # reference origin ordinal of every token (-1: fresh), concatenated like token_old
    token_origin: I64 = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))


def ground_truth(prepared: Prepared, query_docs: int = 5000, k: int = 8) -> Truth:
    """Run the reference mode (All, unlimited, NB) over the stream: the paper's truth."""
    det = OriginDetector(OriginConfig.reference(shingle_width=k), reject_repeated_ids=False)
    n = len(prepared.ids)
    dominant = np.full(n, -1, dtype=np.int64)
    old_parts: list[BOOL] = []
    token_origin_parts: list[I64] = []
    origin_parts: list[I64] = []
    copied = 0
    blocks: list[int] = []
    for i, (doc_id, th) in enumerate(zip(prepared.ids, prepared.hashes, strict=True)):
        res = det.process_hashes(doc_id, th)
        if res.dominant is not None:
            dominant[i] = res.dominant
        old_parts.append(res.token_origin >= 0)
        token_origin_parts.append(res.token_origin)
        origin_parts.append(res.origins)
        copied += int(np.count_nonzero(res.origins != res.ordinal))
        blocks.extend(_block_token_lengths(res.origins, res.ordinal, k))
    offsets = np.zeros(n + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([p.shape[0] for p in old_parts])
    shingle_offsets = np.zeros(n + 1, dtype=np.int64)
    shingle_offsets[1:] = np.cumsum([p.shape[0] for p in origin_parts])
    has = np.flatnonzero(dominant >= 0)
    query = has[-query_docs:] if query_docs > 0 else has
    return Truth(
        dominant=dominant,
        own_dominant=dominant == np.arange(n),
        token_old=np.concatenate(old_parts) if old_parts else np.zeros(0, dtype=bool),
        token_offsets=offsets,
        query=query,
        shingle_origin=np.concatenate(origin_parts) if origin_parts else np.zeros(0, np.int64),
        shingle_offsets=shingle_offsets,
        shingle_copy_ratio=copied / max(prepared.total_shingles, 1),
        mean_copied_block=float(np.mean(blocks)) if blocks else 0.0,
        token_origin=(
            np.concatenate(token_origin_parts) if token_origin_parts else np.zeros(0, np.int64)
        ),
    )


def _block_token_lengths(origins: I64, own: int, k: int) -> list[int]:
    """Token lengths of copied blocks (maximal runs of shingles with one other origin)."""
    out = []
    j = 0
    m = origins.shape[0]
    while j < m:
        if origins[j] == own:
            j += 1
            continue
        r = j
        while r + 1 < m and origins[r + 1] == origins[j]:
            r += 1
        out.append(r - j + k)
        j = r + 1
    return out


def memory_for_fraction(fraction: float, total_shingles: int, bucket_size: int = 64) -> int:
    """Bytes of a table holding ``fraction`` of all shingles at 18 bytes an entry (Table 2)."""
    buckets = max(1, math.ceil(fraction * total_shingles / bucket_size))
    return buckets * (bucket_size * _SIZING_ENTRY_BYTES + 1)


@dataclasses.dataclass(frozen=True)
class RunResult:
    """One configuration at one memory size."""

    label: str
    fraction: float
    memory_bytes: int
    capacity: int
    ssr: float
    do: float
    tf: float
    extra_labelled: int
    extra_accuracy: float
    stored_median_age: float  # documents between an entry's origin and the stream end
    seconds: float


def run_config(
    prepared: Prepared, truth: Truth, config: OriginConfig, fraction: float
) -> RunResult:
    """Stream the whole prepared stream through ``config``; score DO, TF and ssr."""
    det = OriginDetector(config, reject_repeated_ids=False)
    query = np.zeros(len(prepared.ids), dtype=bool)
    query[truth.query] = True
    pred_old = np.zeros(truth.token_old.shape[0], dtype=bool)
    correct = 0
    selected = 0
    extra = 0
    extra_ok = 0
    t0 = time.perf_counter()
    for i, (doc_id, th) in enumerate(zip(prepared.ids, prepared.hashes, strict=True)):
        res = det.process_hashes(doc_id, th)
        selected += len(res.selection)
        if not query[i]:
            continue
        a, b = truth.token_offsets[i], truth.token_offsets[i + 1]
        pred_old[a:b] = res.token_origin >= 0
        correct += res.most_copied == truth.dominant[i]
        if config.estimation != "nb" and config.selection not in ("hashbreak", "dct"):
            # Table 11: selected shingles NB leaves at the default origin but E/B/BE labels
            guessed = ~res.found & (res.origins != res.ordinal)
            if guessed.any():
                ref = truth.shingle_origin[truth.shingle_offsets[i] : truth.shingle_offsets[i + 1]]
                extra += int(np.count_nonzero(guessed))
                extra_ok += int(
                    np.count_nonzero(ref[res.selection.starts[guessed]] == res.origins[guessed])
                )
    seconds = time.perf_counter() - t0
    qmask = np.zeros(truth.token_old.shape[0], dtype=bool)
    for i in truth.query.tolist():
        qmask[truth.token_offsets[i] : truth.token_offsets[i + 1]] = True
    table = det.table
    return RunResult(
        label=config.label,
        fraction=fraction,
        memory_bytes=config.memory_bytes or 0,
        capacity=int(table.capacity),
        ssr=selected_shingle_ratio(selected, prepared.total_shingles),
        do=correct / max(truth.query.shape[0], 1),
        tf=token_freshness_score(truth.token_old[qmask], pred_old[qmask]),
        extra_labelled=extra,
        extra_accuracy=extra_ok / extra if extra else math.nan,
        stored_median_age=_median_age(det, len(prepared.ids)),
        seconds=seconds,
    )


def _median_age(det: OriginDetector, n_docs: int) -> float:
    table = det.table
    if not isinstance(table, BucketTable):
        return math.nan
    origins = table.stored_origins()
    return float(np.median(n_docs - origins)) if origins.size else math.nan


# --- the grid ------------------------------------------------------------------------------


def _cfg(
    selection: str,
    parameter: int | None,
    no_overlap: bool,
    eviction: str,
    estimation: str,
    lucky_limit: int = 11,
) -> OriginConfig:
    return OriginConfig.paper(
        lucky_limit=lucky_limit,
        selection=selection,
        selection_parameter=parameter,
        no_overlap=no_overlap,
        eviction=eviction,
        estimation=estimation,
        memory_bytes=1 << 20,
    )


SELECTION_GRID: tuple[tuple[str, int | None, bool], ...] = (
    ("all", None, False),
    ("hailstorm", None, True),
    ("hailstorm", None, False),
    ("every", 4, False),
    ("winnowing", 8, True),
    ("modulo", 3, True),
    ("hashbreak", 3, False),
    ("dct", 8, False),
)
ALL_SELECTIONS: tuple[tuple[str, int | None, bool], ...] = (
    ("all", None, False),
    ("hailstorm", None, False),
    ("hailstorm", None, True),
    *(("every", p, False) for p in (4, 6, 8)),
    *(("modulo", p, n) for p in range(2, 9) for n in (False, True)),
    *(("winnowing", p, n) for p in range(5, 10) for n in (False, True)),
    *(("hashbreak", p, False) for p in range(3, 9)),
    *(("dct", p, False) for p in range(3, 9)),
)


def experiment_configs() -> list[tuple[str, OriginConfig]]:
    """(table, config) of the grid, deduplicated by configuration."""
    out: list[tuple[str, OriginConfig]] = []
    for sel in SELECTION_GRID:
        out.append(("selection-A", _cfg(*sel, "random", "nb")))
        out.append(("selection-B", _cfg(*sel, "lucky", "be")))
    for sel in (("all", None, False), ("hailstorm", None, True)):
        for ev in ("random", "lru", "copycount", "lucky"):
            out.append(("eviction", _cfg(*sel, ev, "nb")))
        for ev in ("copycount", "lucky"):
            for es in ("nb", "e", "b", "be"):
                out.append(("estimation", _cfg(*sel, ev, es)))
        # sensitivity of lucky eviction to its halving limit (the paper fixed 11)
        for limit in (2, 4, 11):
            out.append(("lucky-limit", _cfg(*sel, "lucky", "be", limit)))
    # estimation with an aging lucky score, and BE with the recency-friendly policies
    nhs = ("hailstorm", None, True)
    for es in ("nb", "e", "b", "be"):
        out.append(("lucky-limit-2-estimation", _cfg(*nhs, "lucky", es, 2)))
    for ev in ("random", "lru"):
        out.append(("lucky-limit-2-estimation", _cfg(*nhs, ev, "be")))
    # the small-memory configurations chosen on the earlier half of the query documents
    # (research/origin_small.py; docs/origin/small_memory.md)
    for limit, every, bridge in SMALL_MEMORY_CHOICES:
        cfg = _cfg(*nhs, "lucky", "b", limit)
        out.append(
            ("small-memory", dataclasses.replace(cfg, lucky_every=every, bridge_limit=bridge))
        )
    return out


# (lucky_limit, lucky_every, bridge_limit) of NHs + Lucky + B chosen at 0.3 % and 0.1 %
SMALL_MEMORY_CHOICES: tuple[tuple[int, int, int], ...] = ((2, 3, 30), (3, 3, 255))


def ssr_table(prepared: Prepared) -> dict[str, float]:
    """ssr of every selection variant (Table 3), on the prepared stream."""
    out = {}
    for sel in ALL_SELECTIONS:
        cfg = _cfg(*sel, "random", "nb")
        selected = sum(len(select(th, cfg)) for th in prepared.hashes)
        out[cfg.label.split("+")[0]] = selected / prepared.total_shingles
    return out


def _machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numba

    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def run_experiment(
    out_dir: Path,
    *,
    data_dir: Path | None = None,
    quick: bool = False,
    full: bool = False,
    query_docs: int = 5000,
    seed: int = 0,
    alignment: bool = True,
    progress: Callable[[str], None] | None = None,
    sizes: Sequence[float] | None = None,
) -> dict[str, Any]:
    """Run the whole grid on the Reuters copy stream (and headline configs on the plain
    Reuters stream) and, when ``alignment``, the PAN13 passage alignment
    (:func:`pan13_alignment.run_alignment`); write ``results.json``,
    ``results.md``, ``alignment.*`` and PNG plots to ``out_dir``.
    ``sizes`` (fractions of all shingles) reruns only those memory sizes and merges them into
    an existing ``out_dir/results.json`` (runs at other sizes are kept as they were).
    Returns the results dictionary."""
    say = progress or (lambda _msg: None)
    data = Path(data_dir) if data_dir else default_data_dir()
    reuters_path = data / "reuters21578" / "docs.jsonl.gz"
    if not reuters_path.exists():
        raise InputError(f"Reuters data not found at {reuters_path}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fractions: Sequence[float] = (
        QUICK_FRACTIONS if quick else MEMORY_FRACTIONS if full else DEFAULT_FRACTIONS
    )
    if sizes is not None:
        if not sizes or not all(0.0 < f <= 1.0 for f in sizes):
            raise ConfigError(f"sizes must be fractions in (0, 1], got {list(sizes)!r}")
        fractions = tuple(sizes)
    reuters = load_reuters(reuters_path)
    results: dict[str, Any] = {"machine": _machine(), "fractions": list(fractions), "streams": {}}
    streams = {
        "copy": copy_stream(reuters[:COPY_STREAM_ORIGINALS], seed=seed),
        "reuters": reuters,
    }
    for name, stream in streams.items():
        t0 = time.perf_counter()
        prepared = prepare(stream)
        truth = ground_truth(prepared, query_docs=query_docs)
        q = truth.query
        stats = {
            "documents": len(prepared.ids),
            "documents_with_copies_generated": sum(1 for d in stream if d.sources),
            "tokens": prepared.total_tokens,
            "shingles": prepared.total_shingles,
            "with_dominant_origin": float(np.mean(truth.dominant >= 0)),
            "query_documents": int(q.shape[0]),
            "query_own_dominant": float(np.mean(truth.own_dominant[q])) if q.size else math.nan,
            "query_fresh_tokens": float(
                1
                - np.mean(
                    np.concatenate(
                        [
                            truth.token_old[truth.token_offsets[i] : truth.token_offsets[i + 1]]
                            for i in q.tolist()
                        ]
                    )
                )
            )
            if q.size
            else math.nan,
            "shingle_copy_ratio": truth.shingle_copy_ratio,
            "mean_copied_block_tokens": truth.mean_copied_block,
            "generator_agreement": _generator_agreement(stream, prepared, truth),
            "truth_seconds": time.perf_counter() - t0,
        }
        say(f"[{name}] {json.dumps(stats)}")
        entry: dict[str, Any] = {"stats": stats, "runs": []}
        if name == "copy":
            entry["ssr"] = ssr_table(prepared)
            configs = experiment_configs()
        else:
            configs = [
                ("headline", _cfg("hailstorm", None, True, "lucky", "be")),
                ("headline", _cfg("hailstorm", None, True, "random", "nb")),
                ("headline", _cfg("all", None, False, "lucky", "be")),
            ]
        done: dict[tuple[str, float], dict[str, Any]] = {}
        for table, cfg in configs:
            for frac in fractions:
                key = (cfg.scheme_id, frac)
                if key not in done:
                    mem = memory_for_fraction(frac, prepared.total_shingles, cfg.bucket_size)
                    run = run_config(
                        prepared, truth, dataclasses.replace(cfg, memory_bytes=mem), frac
                    )
                    done[key] = dataclasses.asdict(run)
                    say(
                        f"[{name}] {run.label} {frac:.3%}: ssr {run.ssr:.3f} DO {run.do:.4f}"
                        f" TF {run.tf:.4f} ({run.seconds:.1f}s)"
                    )
                entry["runs"].append({"table": table, **done[key]})
        results["streams"][name] = entry
    if alignment and (data / "pan13_text_alignment" / "docs.jsonl.gz").exists():
        say("PAN13 passage alignment ...")
        scores = run_alignment(out_dir, data_dir=data, progress=say)
        results["alignment"] = {
            k: {c: s.to_dict() for c, s in v.items()} for k, v in scores.items()
        }
    if sizes is not None and (out_dir / "results.json").exists():
        results = _merge_sizes(json.loads((out_dir / "results.json").read_text()), results)
    (out_dir / "results.json").write_text(json.dumps(results, indent=1, default=_json_default))
    (out_dir / "results.md").write_text(render_markdown(results))
    _plots(results, out_dir)
    return results


def _merge_sizes(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``old`` results with every run at one of ``new``'s sizes replaced by ``new``'s."""
    rerun = set(new["fractions"])
    merged = dict(old)
    merged["machine"] = new["machine"]
    merged["fractions"] = sorted(set(old["fractions"]) | rerun, reverse=True)
    merged["streams"] = dict(old["streams"])
    for name, entry in new["streams"].items():
        kept = [
            r for r in old["streams"].get(name, {}).get("runs", []) if r["fraction"] not in rerun
        ]
        merged["streams"][name] = {**entry, "runs": kept + entry["runs"]}
    if "alignment" in new:
        merged["alignment"] = new["alignment"]
    return merged


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer | np.floating):
        return value.item()
    raise TypeError(type(value).__name__)


def _generator_agreement(stream: Sequence[StreamDoc], prepared: Prepared, truth: Truth) -> float:
    """Share of generated copiers whose reference dominant origin is their main source."""
    index = {doc_id: i for i, doc_id in enumerate(prepared.ids)}
    hit = total = 0
    for doc in stream:
        if not doc.sources or doc.id not in index or doc.sources[0] not in index:
            continue
        total += 1
        hit += truth.dominant[index[doc.id]] == index[doc.sources[0]]
    return hit / total if total else math.nan


def _pct(x: float) -> str:
    return "n/a" if x != x else f"{100 * x:.1f}"


def _num(x: float) -> str:
    return "n/a" if x != x else f"{x:.0f}"


def render_markdown(results: Mapping[str, Any]) -> str:
    """Markdown tables of a results dictionary (as the paper's Tables 3-10)."""
    lines = [
        "# Origin detection results (generated by `python research/origin_experiments.py`)",
        "",
    ]
    lines.append(f"Machine: `{json.dumps(results['machine'])}`")
    fracs = results["fractions"]
    for name, entry in results["streams"].items():
        lines += ["", f"## Stream `{name}`", "", "```", json.dumps(entry["stats"], indent=1), "```"]
        if "ssr" in entry:
            lines += [
                "",
                "### ssr of every selection variant (Table 3)",
                "",
                "| selection | ssr % |",
                "|---|---|",
            ]
            lines += [f"| {k} | {_pct(v)} |" for k, v in entry["ssr"].items()]
        tables = dict.fromkeys(r["table"] for r in entry["runs"])
        for table in tables:
            runs = [r for r in entry["runs"] if r["table"] == table]
            labels = list(dict.fromkeys(r["label"] for r in runs))
            metrics = ["do", "tf"]
            if table in ("eviction", "lucky-limit"):
                metrics.append("stored_median_age")
            for metric in metrics:
                fmt = _pct if metric != "stored_median_age" else _num
                title = (
                    f"{metric.upper()} (%)"
                    if fmt is _pct
                    else "median age (documents) of the entries stored at the end"
                )
                head = (
                    "| config | ssr % | "
                    + " | ".join(f"{100 * f:.1f} %" for f in fracs)
                    + " | avg |"
                )
                lines += [
                    "",
                    f"### {table}: {title} by memory (% of all shingles at 18 B)",
                    "",
                    head,
                ]
                lines.append("|" + "---|" * (len(fracs) + 3))
                for label in labels:
                    vals = {r["fraction"]: r[metric] for r in runs if r["label"] == label}
                    ssr = next(r["ssr"] for r in runs if r["label"] == label)
                    row = [vals.get(f, math.nan) for f in fracs]
                    avg = float(np.nanmean(row))
                    lines.append(
                        f"| {label} | {_pct(ssr)} | "
                        + " | ".join(fmt(v) for v in row)
                        + f" | {fmt(avg)} |"
                    )
    if "alignment" in results:
        scores = {
            label: {c: AlignmentScore(**_score_fields(v)) for c, v in per.items()}
            for label, per in results["alignment"].items()
        }
        lines += ["", "## PAN13 passage alignment (character precision / recall)", ""]
        lines.append(render_alignment(scores))
    return "\n".join(lines) + "\n"


def _score_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    keep = ("category", "pairs", "true_chars", "predicted_chars", "matched_chars")
    return {k: row[k] for k in keep}


def _plots(results: Mapping[str, Any], out_dir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entry = results["streams"].get("copy")
    if entry is None:
        return
    for table in dict.fromkeys(r["table"] for r in entry["runs"]):
        runs = [r for r in entry["runs"] if r["table"] == table]
        if not runs:
            continue
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for ax, metric in zip(axes, ("do", "tf"), strict=True):
            for label in dict.fromkeys(r["label"] for r in runs):
                pts = sorted((r["fraction"], r[metric]) for r in runs if r["label"] == label)
                ax.plot(
                    [100 * p[0] for p in pts], [100 * p[1] for p in pts], marker="o", label=label
                )
            # trivial baselines: every document its own origin / every token fresh
            stats = entry["stats"]
            base = stats["query_own_dominant"] if metric == "do" else stats["query_fresh_tokens"]
            ax.axhline(100 * base, color="grey", linestyle="--", linewidth=1, label="trivial")
            ax.set_xscale("log")
            ax.set_xlabel("table size (% of all shingles)")
            ax.set_ylabel(f"{metric.upper()} (%)")
            ax.grid(True, alpha=0.3)
        axes[0].legend(fontsize=7)
        fig.suptitle(f"Origin detection on the Reuters copy stream: {table}")
        fig.tight_layout()
        fig.savefig(out_dir / f"origin_{table}.png", dpi=110)
        plt.close(fig)


def rerender(out_dir: Path) -> None:
    """Rewrite ``results.md`` and the plots from ``results.json`` (no recomputation)."""
    results = json.loads((Path(out_dir) / "results.json").read_text())
    (Path(out_dir) / "results.md").write_text(render_markdown(results))
    _plots(results, Path(out_dir))


def main(argv: Iterable[str] | None = None) -> int:
    """``python research/origin_experiments.py --out docs/origin [--quick]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path("docs/origin"))
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="2 memory sizes")
    parser.add_argument("--full", action="store_true", help="50 %% + the 8 sizes of Table 2")
    parser.add_argument("--query-docs", type=int, default=5000)
    parser.add_argument("--no-alignment", action="store_true", help="skip PAN13 alignment")
    parser.add_argument(
        "--sizes",
        default=None,
        help="comma-separated fractions of all shingles (e.g. 0.003,0.001): rerun only these"
        " sizes and merge them into OUT/results.json",
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    sizes = None
    if args.sizes is not None:
        try:
            sizes = tuple(float(x) for x in args.sizes.split(",") if x.strip())
        except ValueError:
            parser.error(f"--sizes must be comma-separated numbers, got {args.sizes!r}")
    run_experiment(
        args.out,
        data_dir=args.data,
        quick=args.quick,
        full=args.full,
        query_docs=args.query_docs,
        alignment=not args.no_alignment,
        progress=lambda m: print(m, file=sys.stderr, flush=True),
        sizes=sizes,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
