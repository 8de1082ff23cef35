"""``neardup demo``: deduplicate a search result set drawn from news, with planted copies.

What it does (the realtime result-set job, end to end): draws ``--size`` articles, plants
edited copies of some of them at later ranks (re-sends, corrections with a few words
changed, trimmed versions, heavily rewritten ones; deterministic with ``--seed``), signs
every article offline with the sentence sketch, then runs :func:`neardup.dedup_result_set`
and prints which positions were kept, which were removed as duplicates of which earlier
position, how each planted copy fared, and the timing of the dedup (cold, warm, and a cache
hit).  The articles are real Reuters-21578 stories when the shared data is found (``--data``,
``$NEARDUP_DATA`` or ``../shared/data``), else the twelve synthetic stories neardup ships
(:mod:`neardup.samples`); the first line of the output says which.  A planted copy is shown
under its own id, ``<original id>~<edit>``.

The copy generator (:func:`plant_copies`) is also used by the tests and benchmarks of the
result-set dedup, so every figure there is measured on the same kind of set.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import random
import statistics
import time
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import click

from neardup.cli.common import shared_data
from neardup.errors import InputError, NotFoundError, StoreError

__all__ = ["EDITS", "Planted", "demo", "edit_text", "load_articles", "plant_copies"]

EDITS = ("resend", "correction", "trimmed", "rewritten")

_FILLER = ["reportedly", "sharply", "again", "officially", "late", "early", "fully", "partly"]


def load_articles(path: Path, limit: int, min_chars: int = 200) -> list[dict[str, Any]]:
    """The first ``limit`` articles of a Reuters ``docs.jsonl.gz`` with some body text."""
    from neardup.batch.io import parse_json_line

    if not path.exists():
        raise NotFoundError(
            f"no data at {path}: pass --data with the path of reuters21578/docs.jsonl.gz "
            "(or set NEARDUP_DATA to the shared/data folder)"
        )
    out: list[dict[str, Any]] = []
    try:
        with gzip.open(path, "rb") as fh:
            for line_no, line in enumerate(fh, 1):
                doc = parse_json_line(line)
                if isinstance(doc, InputError):
                    raise InputError(f"{path}:{line_no}: {doc}")
                text = doc.get("text") if isinstance(doc, dict) else None
                if isinstance(text, str) and len(text) >= min_chars:
                    out.append(doc)
                    if len(out) >= limit:
                        break
    except (OSError, EOFError, zlib.error) as exc:
        raise StoreError(f"cannot read {path}: {exc}") from exc
    return out


def _pool(data: Path | None, need: int) -> tuple[list[dict[str, Any]], str]:
    """Articles to draw from and a phrase saying what they are: Reuters-21578 when found,
    else the synthetic sample stories."""
    if data is not None:
        path = data
        if path.is_dir():
            path = (
                path / "reuters21578" / "docs.jsonl.gz"
                if (path / "reuters21578").is_dir()
                else path / "docs.jsonl.gz"
            )
        return load_articles(path, need), f"real Reuters articles from {path}"
    try:
        folder = shared_data(None, "reuters21578", "docs.jsonl.gz")
    except NotFoundError:
        from neardup.samples import sample_stories

        stories = [{"id": a.id, "text": a.text, "title": a.title} for a in sample_stories()]
        return stories, (
            "synthetic sample stories shipped with neardup (Reuters-21578 not found: pass"
            " --data or set NEARDUP_DATA for real articles)"
        )
    path = folder / "reuters21578" / "docs.jsonl.gz"
    return load_articles(path, need), f"real Reuters articles from {path}"


def planted_ids(base_ids: Sequence[str], labels: Sequence[str]) -> list[str]:
    """The id of each position: an original keeps its id, a planted copy is
    ``<original id>~<edit>`` (``~2``, ``~3``... when the same edit is planted twice)."""
    ids: list[str] = []
    seen: dict[str, int] = {}
    for label in labels:
        kind, n = label.split(":")
        base = base_ids[int(n)]
        if kind == "orig":
            ids.append(base)
            continue
        name = f"{base}~{kind.removesuffix('-of')}"
        seen[name] = seen.get(name, 0) + 1
        ids.append(name if seen[name] == 1 else f"{name}~{seen[name]}")
    return ids


def _sentences(text: str) -> list[str]:
    from neardup.text import sentence_spans

    return [text[s:e] for s, e in sentence_spans(text)]


def edit_text(text: str, edit: str, rng: random.Random) -> str:
    """An edited copy of ``text``: one of :data:`EDITS`.

    * ``resend``: the same body with a new dateline line in front (a wire re-send).
    * ``correction``: one word inserted into one sentence in five (at least one).
    * ``trimmed``: the last third of the sentences cut (a shorter version of the story).
    * ``rewritten``: a word inserted into two sentences in three (a heavy rewrite).
    """
    sents = _sentences(text)
    if not sents:
        return text
    if edit == "resend":
        return "REPEAT - " + text
    if edit == "trimmed":
        keep = max(1, len(sents) - len(sents) // 3)
        return " ".join(sents[:keep])
    if edit not in ("correction", "rewritten"):
        raise InputError(f"unknown edit {edit!r}; choose one of {', '.join(EDITS)}")
    share = 0.2 if edit == "correction" else 0.67
    count = max(1, round(share * len(sents)))
    for idx in rng.sample(range(len(sents)), min(count, len(sents))):
        words = sents[idx].split(" ")
        words.insert(rng.randrange(len(words) + 1), rng.choice(_FILLER))
        sents[idx] = " ".join(words)
    return " ".join(sents)


@dataclasses.dataclass(frozen=True)
class Planted:
    """A planted copy: at ``position``, an ``edit`` of the article at ``original``."""

    position: int
    original: int
    edit: str


def plant_copies(
    texts: Sequence[str], copies: int, seed: int
) -> tuple[list[str], list[str], list[Planted]]:
    """A result set: ``texts`` with ``copies`` edited copies inserted at later ranks.

    Returns the texts in rank order, a label per position (``"orig:<n>"`` or
    ``"<edit>-of:<n>"`` with ``n`` the index in ``texts``) and the planted copies with their
    final positions.  Deterministic for a given ``seed``.
    """
    rng = random.Random(seed)
    ranked: list[tuple[str, str, int, str | None]] = [
        (t, f"orig:{n}", n, None) for n, t in enumerate(texts)
    ]
    for c in range(min(copies, len(texts))):
        source = rng.randrange(len(texts))
        edit = EDITS[c % len(EDITS)]
        copy = edit_text(texts[source], edit, rng)
        at_source = next(
            p for p, item in enumerate(ranked) if item[2] == source and item[3] is None
        )
        ranked.insert(
            rng.randint(at_source + 1, len(ranked)), (copy, f"{edit}-of:{source}", source, edit)
        )
    orig_pos = {item[2]: p for p, item in enumerate(ranked) if item[3] is None}
    planted = [
        Planted(p, orig_pos[item[2]], item[3])
        for p, item in enumerate(ranked)
        if item[3] is not None
    ]
    return [r[0] for r in ranked], [r[1] for r in ranked], planted


def _timings(fn: Any, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1e6)
    return out


def _chunks(items: Sequence[int], size: int) -> Iterator[Sequence[int]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


@click.command("demo")
@click.option(
    "--data",
    type=click.Path(path_type=Path),
    default=None,
    help="reuters21578/docs.jsonl.gz or the folder holding it (default: $NEARDUP_DATA or"
    " ../shared/data; without either, the synthetic sample stories).",
)
@click.option(
    "--size",
    type=click.IntRange(1, 20000),
    default=100,
    show_default=True,
    help="Articles drawn for the result set (at most the 12 sample stories without Reuters).",
)
@click.option(
    "--copies",
    type=click.IntRange(0, 20000),
    default=12,
    show_default=True,
    help="Edited copies planted at later ranks.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=0.5,
    show_default=True,
    help="Near-duplicate when the share of sentences in common (Jaccard) is at least this;"
    " lower it to catch more heavily edited copies.",
)
@click.option(
    "--k",
    "k",
    type=click.IntRange(1, 1 << 16),
    default=None,
    help="Sentences kept per signature (default: the sketch's; more gives closer estimates"
    " on long articles).",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Which articles are drawn and how they are edited.",
)
@click.option(
    "--offset",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="Skip this many eligible articles before drawing.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def demo(
    data: Path | None,
    size: int,
    copies: int,
    threshold: float,
    k: int | None,
    seed: int,
    offset: int,
    as_json: bool,
) -> None:
    """Deduplicate a result set of news articles with planted edited copies."""
    from neardup.detect.resultset import ResultSetDeduper
    from neardup.sketch import sign

    everything, what = _pool(data, offset + size * 4)
    pool = everything[offset:]
    if not pool:
        raise InputError(f"no article with body text to draw from ({what})")
    rng = random.Random(seed)
    docs = rng.sample(pool, min(size, len(pool)))
    texts, labels, planted = plant_copies([d["text"] for d in docs], copies, seed)
    ids = planted_ids([str(d.get("id", "?")) for d in docs], labels)

    params = {} if k is None else {"k": k}
    start = time.perf_counter()
    sigs = [sign(t, "sentences", **params) for t in texts]
    sign_us = (time.perf_counter() - start) * 1e6 / len(texts)

    deduper = ResultSetDeduper()
    uncached = ResultSetDeduper(max_entries=0)
    cold = _timings(lambda: deduper(sigs, threshold, k=k), 1)[0]
    warm = _timings(lambda: uncached(sigs, threshold, k=k), 50)
    deduper(sigs, threshold, k=k)
    hits = _timings(lambda: deduper(sigs, threshold, k=k), 200)
    result = deduper(sigs, threshold, k=k)

    from neardup.similarity import jaccard
    from neardup.sketch.bottomk import sentence_hashes

    full = {
        p.position: (sentence_hashes(texts[p.position]), sentence_hashes(texts[p.original]))
        for p in planted
    }
    exact = {pos: jaccard(a, b) for pos, (a, b) in full.items()}
    kept = [i for i, r in enumerate(result) if r == i]
    removed = [(i, r) for i, r in enumerate(result) if r != i]
    found = sum(1 for p in planted if result[p.position] != p.position)
    per_edit = {e: [0, 0] for e in EDITS}
    for p in planted:
        per_edit[p.edit][1] += 1
        per_edit[p.edit][0] += result[p.position] != p.position
    planted_pos = {p.position for p in planted}
    natural = [(i, r) for i, r in removed if i not in planted_pos]
    report = {
        "data": what,
        "articles": len(docs),
        "planted_copies": len(planted),
        "result_set_size": len(texts),
        "threshold": threshold,
        "k": k,
        "kept": kept,
        "duplicates": [
            {"position": i, "of": r, "id": ids[i], "of_id": ids[r], "label": labels[i]}
            for i, r in removed
        ],
        "planted": [
            {
                "position": p.position,
                "original": p.original,
                "edit": p.edit,
                "exact_sentence_jaccard": round(exact[p.position], 4),
                "removed": result[p.position] != p.position,
            }
            for p in planted
        ],
        "planted_found": found,
        "planted_found_by_edit": {e: {"found": v[0], "planted": v[1]} for e, v in per_edit.items()},
        "natural_duplicates": len(natural),
        "sign_us_per_article": round(sign_us, 1),
        "dedup_us": {
            "first_call": round(cold, 1),
            "median": round(statistics.median(warm), 1),
            "cache_hit_median": round(statistics.median(hits), 1),
        },
    }
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(
        f"result set: {len(texts)} articles ({len(docs)} {what}; {len(planted)} edited copies"
        f" planted, seed {seed})"
    )
    click.echo(f"threshold {threshold}, sentence sketch k={k or 'default'}")
    click.echo(f"kept {len(kept)}, removed {len(removed)} as near-duplicates of an earlier rank:")
    for i, r in removed:
        mark = "planted " + labels[i].split("-of")[0] if i in planted_pos else "natural"
        click.echo(f"  #{i:<4} (id {ids[i]}) duplicates #{r:<4} (id {ids[r]})   [{mark}]")
    click.echo(
        f"planted copies found: {found}/{len(planted)}  "
        + ", ".join(f"{e} {v[0]}/{v[1]}" for e, v in per_edit.items() if v[1])
    )
    for p in planted:
        verdict = "found" if result[p.position] != p.position else "not removed"
        click.echo(
            f"  #{p.position:<4} {p.edit:<10} of #{p.original:<4} exact sentence Jaccard "
            f"{exact[p.position]:.2f}  -> {verdict}"
        )
    if natural:
        click.echo(f"natural near-duplicates in the draw (not planted): {len(natural)}")
    click.echo("kept positions:")
    for chunk in _chunks(kept, 25):
        click.echo("  " + " ".join(str(i) for i in chunk))
    click.echo(
        f"signing (offline): {sign_us:.0f} us/article; dedup: first call "
        f"{cold:.0f} us (includes compile/load), median {statistics.median(warm):.0f} us, "
        f"cache hit {statistics.median(hits):.1f} us"
    )
