"""``neardup demo``: deduplicate a search result set drawn from news, with planted copies.

What it does (the realtime result-set job, end to end): draws ``--size`` articles, plants
edited copies of some of them at later ranks (re-sends, corrections with a few words
changed, trimmed versions, heavily rewritten ones; deterministic with ``--seed``), signs
every article offline with the default coverage sketch (``--sketch sentences``: seed
000's sentence sketch), then runs :func:`neardup.dedup_result_set`
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

import contextlib
import dataclasses
import json
import random
import statistics
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import click

from neardup.cli.common import shared_data
from neardup.errors import InputError, NotFoundError

__all__ = ["EDITS", "Planted", "demo", "edit_text", "load_articles", "plant_copies"]

EDITS = ("resend", "correction", "trimmed", "rewritten")

_FILLER = ["reportedly", "sharply", "again", "officially", "late", "early", "fully", "partly"]


def load_articles(path: Path, limit: int, min_chars: int = 200) -> list[dict[str, Any]]:
    """The first ``limit`` articles of a Reuters ``docs.jsonl.gz`` with some body text."""
    from neardup.batch.io import parse_json_line, read_lines

    if not path.exists():
        raise NotFoundError(
            f"no data at {path}: pass --data with the path of reuters21578/docs.jsonl.gz "
            "(or set NEARDUP_DATA to the shared/data folder)"
        )
    out: list[dict[str, Any]] = []
    with contextlib.closing(read_lines(path)) as lines:
        for line_no, line in lines:
            doc = parse_json_line(line)
            if isinstance(doc, InputError):
                raise InputError(f"{path}:{line_no}: {doc}")
            text = doc.get("text") if isinstance(doc, dict) else None
            if isinstance(text, str) and len(text) >= min_chars:
                out.append(doc)
                if len(out) >= limit:
                    break
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
    "--sketch",
    type=click.Choice(["coverage", "sentences"]),
    default="coverage",
    show_default=True,
    help="coverage: the default signature (the near-duplicate rule on estimated coverages);"
    " sentences: seed 000's sentence sketch with a Jaccard threshold.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=None,
    help="With --sketch sentences: near-duplicate when the share of sentences in common"
    " (Jaccard) is at least this (default 0.5); lower it to catch more heavily edited copies.",
)
@click.option(
    "--k",
    "k",
    type=click.IntRange(1, 1 << 16),
    default=None,
    help="With --sketch sentences: sentences kept per signature (default: the sketch's).",
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
    sketch: str,
    threshold: float | None,
    k: int | None,
    seed: int,
    offset: int,
    as_json: bool,
) -> None:
    """Deduplicate a result set of news articles with planted edited copies."""
    if sketch == "coverage" and (threshold is not None or k is not None):
        raise click.UsageError("--threshold and --k apply to --sketch sentences only")
    everything, what = _pool(data, offset + size * 4)
    pool = everything[offset:]
    if not pool:
        raise InputError(f"no article with body text to draw from ({what})")
    rng = random.Random(seed)
    docs = rng.sample(pool, min(size, len(pool)))
    texts, labels, planted = plant_copies([d["text"] for d in docs], copies, seed)
    ids = planted_ids([str(d.get("id", "?")) for d in docs], labels)
    run = _run(texts, sketch, threshold, k)
    report = _report(what, docs, texts, labels, ids, planted, run)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        _print(report, seed)


@dataclasses.dataclass(frozen=True)
class _Run:
    sketch: str
    threshold: float | None
    k: int | None
    result: list[int]
    sign_us: float
    cold_us: float
    warm_us: list[float]
    hit_us: list[float]


def _run(texts: Sequence[str], sketch: str, threshold: float | None, k: int | None) -> _Run:
    """Sign every text, then time the dedup: first call, uncached calls, cache hits."""
    from neardup.detect.resultset import ResultSetDeduper
    from neardup.sketch import sign

    if sketch == "sentences" and threshold is None:
        threshold = 0.5
    params = {} if k is None else {"k": k}
    sign(texts[0], sketch, **params)  # the kernels load once per process: not per article
    start = time.perf_counter()
    sigs = [sign(t, sketch, **params) for t in texts]
    sign_us = (time.perf_counter() - start) * 1e6 / len(texts)
    deduper, uncached = ResultSetDeduper(), ResultSetDeduper(max_entries=0)
    cold = _timings(lambda: deduper(sigs, threshold, k=k), 1)[0]
    warm = _timings(lambda: uncached(sigs, threshold, k=k), 50)
    hits = _timings(lambda: deduper(sigs, threshold, k=k), 200)
    result = list(deduper(sigs, threshold, k=k))
    return _Run(sketch, threshold, k, result, sign_us, cold, warm, hits)


def _exact(texts: Sequence[str], planted: Sequence[Planted], sketch: str) -> dict[int, Any]:
    """The exact answer each planted copy is checked against: the near-duplicate rule's
    verdict on the two full texts (coverage), or their exact sentence Jaccard (sentences)."""
    if sketch == "coverage":
        from neardup.rule import judge

        return {p.position: judge(texts[p.original], texts[p.position]).label for p in planted}
    from neardup.similarity import jaccard
    from neardup.sketch.bottomk import sentence_hashes

    return {
        p.position: round(
            jaccard(sentence_hashes(texts[p.position]), sentence_hashes(texts[p.original])), 4
        )
        for p in planted
    }


def _report(
    what: str,
    docs: Sequence[dict[str, Any]],
    texts: Sequence[str],
    labels: Sequence[str],
    ids: Sequence[str],
    planted: Sequence[Planted],
    run: _Run,
) -> dict[str, Any]:
    result = run.result
    exact = _exact(texts, planted, run.sketch)
    exact_name = "exact_verdict" if run.sketch == "coverage" else "exact_sentence_jaccard"
    removed = [(i, r) for i, r in enumerate(result) if r != i]
    planted_pos = {p.position for p in planted}
    per_edit = {e: {"found": 0, "planted": 0} for e in EDITS}
    for p in planted:
        per_edit[p.edit]["planted"] += 1
        per_edit[p.edit]["found"] += result[p.position] != p.position
    return {
        "data": what,
        "articles": len(docs),
        "planted_copies": len(planted),
        "result_set_size": len(texts),
        "sketch": run.sketch,
        "threshold": run.threshold,
        "k": run.k,
        "kept": [i for i, r in enumerate(result) if r == i],
        "duplicates": [
            {"position": i, "of": r, "id": ids[i], "of_id": ids[r], "label": labels[i]}
            for i, r in removed
        ],
        "planted": [
            {
                "position": p.position,
                "original": p.original,
                "edit": p.edit,
                exact_name: exact[p.position],
                "removed": result[p.position] != p.position,
            }
            for p in planted
        ],
        "planted_found": sum(1 for p in planted if result[p.position] != p.position),
        "planted_found_by_edit": per_edit,
        "natural_duplicates": sum(1 for i, _ in removed if i not in planted_pos),
        "sign_us_per_article": round(run.sign_us, 1),
        "dedup_us": {
            "first_call": round(run.cold_us, 1),
            "median": round(statistics.median(run.warm_us), 1),
            "cache_hit_median": round(statistics.median(run.hit_us), 1),
        },
    }


def _print(report: dict[str, Any], seed: int) -> None:
    planted_pos = {p["position"] for p in report["planted"]}
    by_pos = {d["position"]: d for d in report["duplicates"]}
    click.echo(
        f"result set: {report['result_set_size']} articles ({report['articles']} "
        f"{report['data']}; {report['planted_copies']} edited copies planted, seed {seed})"
    )
    if report["sketch"] == "coverage":
        click.echo("coverage sketch: the near-duplicate rule on estimated coverages")
    else:
        click.echo(f"sentence sketch k={report['k'] or 'default'}, threshold {report['threshold']}")
    click.echo(
        f"kept {len(report['kept'])}, removed {len(by_pos)} as near-duplicates of an earlier rank:"
    )
    for i, d in by_pos.items():
        mark = "planted " + d["label"].split("-of")[0] if i in planted_pos else "natural"
        click.echo(
            f"  #{i:<4} (id {d['id']}) duplicates #{d['of']:<4} (id {d['of_id']})   [{mark}]"
        )
    found = report["planted_found_by_edit"]
    click.echo(
        f"planted copies found: {report['planted_found']}/{report['planted_copies']}  "
        + ", ".join(f"{e} {v['found']}/{v['planted']}" for e, v in found.items() if v["planted"])
    )
    for p in report["planted"]:
        verdict = "found" if p["removed"] else "not removed"
        exact = (
            f"exact rule: {p['exact_verdict']}"
            if "exact_verdict" in p
            else f"exact sentence Jaccard {p['exact_sentence_jaccard']:.2f}"
        )
        click.echo(
            f"  #{p['position']:<4} {p['edit']:<10} of #{p['original']:<4} {exact}  -> {verdict}"
        )
    if report["natural_duplicates"]:
        click.echo(
            f"natural near-duplicates in the draw (not planted): {report['natural_duplicates']}"
        )
    click.echo("kept positions:")
    for chunk in _chunks(report["kept"], 25):
        click.echo("  " + " ".join(str(i) for i in chunk))
    t = report["dedup_us"]
    click.echo(
        f"signing (offline): {report['sign_us_per_article']:.0f} us/article; dedup: first call "
        f"{t['first_call']:.0f} us (includes compile/load), median {t['median']:.0f} us, "
        f"cache hit {t['cache_hit_median']:.1f} us"
    )
