"""Quality of the news stream's decisions (issue 3 "Quality"), on real Reuters text.

Two measurements of :class:`neardup.api.NewsIndex` with its default
:class:`~neardup.detect.stream.StreamConfig` (SQLite store in a temporary directory):

1. **Perturbation benchmark.**  :func:`neardup.evaluation.synth.synthesize` makes copies of
   the first Reuters articles with known edits, and same-topic negatives.  The stream ingests
   the originals first (in date order), then every copy in date order (each copy is dated
   1-720 minutes after its original), exactly as an aggregator would see them.  For every
   labelled pair (earlier article, later article) the stream's verdict is read from the later
   article's decision: its evidence (``matches``) holds the earlier one with verdict
   ``duplicate`` or ``similar``, or the decision is ``duplicate`` of it; otherwise the verdict
   is ``none`` (the stream did not relate them).  Gold labels: ``duplicate`` / ``similar`` /
   ``different`` under each synth label rule (``editorial``, the default, and ``bag80``, the
   previous one; see ``docs/eval.md``), reported side by side.  Per edit type: precision and
   recall of ``duplicate`` and of ``similar``.  Article level: how many ``duplicate``
   decisions point into the wrong story (``duplicate_of`` not the article's own original or a
   copy of it).
2. **Threshold curves.**  For every labelled pair the SimHash distance and the exact
   shingle Jaccard and containment that the stream's verifier computes (same signers, same
   configs), so precision/recall/F1 of the ``duplicate`` decision can be drawn as functions of
   the SimHash distance (the raw ``verify="none"`` rule), of the Jaccard threshold and of the
   containment threshold (the verified rule, candidates within ``similar_max_distance``).  At
   the defaults these offline verdicts agree with the stream's own (checked and reported).
3. **Exact duplicates.**  All of Reuters through the stream; every derived exact-duplicate
   group (``labels_derived_exact_dups.jsonl.gz``) must end up as one group (one original).

Guarantees: deterministic (synth is seeded, the stream's decisions are deterministic for an
ingest order); memory: the benchmark's documents and one decision per document.  Cost: about
4,000 documents through the stream and 20,000 for the exact groups, well under five minutes.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import gzip
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.api import NewsIndex
from neardup.config import Config, check_int
from neardup.detect.stream import Decision, StreamConfig
from neardup.errors import NearDupError
from neardup.evaluation.metrics import precision_recall_f1
from neardup.evaluation.synth import LABEL_RULES, SynthConfig, SynthResult, synthesize
from neardup.sketch.shingleset import sign_shingles
from neardup.sketch.simhash import sign_simhash

__all__ = [
    "GOLD",
    "PREDICTED",
    "PairEvidence",
    "StreamQualityConfig",
    "count_by_edit",
    "exact_groups",
    "main",
    "pair_evidence",
    "pair_verdicts",
    "rates",
    "render_markdown",
    "run_stream",
    "stream_order",
    "stream_quality",
    "threshold_curves",
    "what_if",
]

GOLD = ("duplicate", "similar", "different")
PREDICTED = ("duplicate", "similar", "none")

F64 = npt.NDArray[np.float64]


@dataclasses.dataclass(frozen=True)
class StreamQualityConfig(Config):
    """Size of the perturbation benchmark fed to the stream (synth defaults otherwise)."""

    SCHEME = "stream-quality"

    max_originals: int = 1000
    seed: int = 0
    batch_size: int = 256

    def __post_init__(self) -> None:
        check_int("max_originals", self.max_originals, low=2, high=1_000_000)
        check_int("seed", self.seed, low=0, high=(1 << 63) - 1)
        check_int("batch_size", self.batch_size, low=1, high=1_000_000)


# --- running the stream ----------------------------------------------------------------------


def _date_key(doc: Mapping[str, Any]) -> tuple[bool, str]:
    # ISO-8601 strings of one time zone sort like their instants; undated last.
    date = doc.get("date")
    return (date is None, date or "")


def stream_order(result: SynthResult) -> list[dict[str, Any]]:
    """Originals first (date order), then copies and quotation receivers (date order); ties
    keep the synth order (stable sort), so the order is deterministic."""
    originals = [d for d in result.docs if d["synth"]["role"] == "original"]
    copies = [d for d in result.docs if d["synth"]["role"] != "original"]
    return sorted(originals, key=_date_key) + sorted(copies, key=_date_key)


def run_stream(
    docs: Iterable[Mapping[str, Any]],
    store_dir: Path,
    config: StreamConfig | None = None,
    batch_size: int = 256,
    originals_of: Iterable[str] = (),
) -> tuple[dict[str, Decision], dict[str, str], float, dict[str, str]]:
    """Ingest ``docs`` in order into a fresh SQLite store under ``store_dir``.

    Returns the decisions by id, the refused articles (id -> error message), the wall time
    of the ingest in seconds, and the *current* original (after any takeover) of each id in
    ``originals_of`` that was stored.  Each doc is passed as ``{id, text, title, date}``.
    """
    articles = [
        {"id": d["id"], "text": d["text"], "title": d.get("title"), "date": d.get("date")}
        for d in docs
    ]
    decisions: dict[str, Decision] = {}
    refused: dict[str, str] = {}
    originals: dict[str, str] = {}
    store = store_dir / "stream_quality.db"
    t0 = time.perf_counter()
    with NewsIndex(store=str(store), config=config, checkpoint=None) as news:
        results = news.ingest_many(articles, batch_size=batch_size)
        seconds = time.perf_counter() - t0
        for art, res in zip(articles, results, strict=True):
            if isinstance(res, NearDupError):
                refused[str(art["id"])] = f"{type(res).__name__}: {res}"
            else:
                decisions[res.id] = res
        for i in originals_of:
            if i in decisions:
                originals[i] = news.original_of(i)
    return decisions, refused, seconds, originals


def _verdict_for(decision: Decision | None, earlier: str) -> str:
    """The stream's verdict on (earlier, this article): from the decision's evidence."""
    if decision is None:
        return "none"
    for m in decision.matches:
        if m.id == earlier:
            return m.verdict
    if decision.status == "duplicate" and decision.duplicate_of == earlier:
        return "duplicate"
    return "none"


def pair_verdicts(
    pairs: Sequence[Mapping[str, Any]],
    decisions: Mapping[str, Decision],
    position: Mapping[str, int],
) -> list[str]:
    """The stream's verdict (``duplicate``/``similar``/``none``) for each labelled pair, read
    from the decision of whichever of the two was ingested later."""
    out = []
    for p in pairs:
        a, b = str(p["id1"]), str(p["id2"])
        if position.get(a, -1) > position.get(b, -1):
            a, b = b, a
        out.append(_verdict_for(decisions.get(b), a))
    return out


def count_by_edit(
    edits: Sequence[str], gold: Sequence[str], predicted: Sequence[str]
) -> dict[str, dict[str, dict[str, int]]]:
    """``counts[edit][gold][predicted]`` (every gold x predicted cell present, zeros
    included), plus ``counts["all"]`` over every pair."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    keys = (*sorted(set(edits)), "all")
    for e in keys:
        out[e] = {g: dict.fromkeys(PREDICTED, 0) for g in GOLD}
    for e, g, p in zip(edits, gold, predicted, strict=True):
        out[e][g][p] += 1
        out["all"][g][p] += 1
    return out


def rates(cell: Mapping[str, Mapping[str, int]]) -> dict[str, float | int | None]:
    """Precision and recall of ``duplicate`` and of ``similar`` from one confusion table;
    ``None`` where the denominator is 0 (nothing predicted / nothing to find)."""

    def ratio(num: int, den: int) -> float | None:
        return num / den if den else None

    out: dict[str, float | int | None] = {}
    for label in ("duplicate", "similar"):
        tp = cell[label][label]
        predicted = sum(cell[g][label] for g in GOLD)
        actual = sum(cell[label].values())
        out[f"{label}_precision"] = ratio(tp, predicted)
        out[f"{label}_recall"] = ratio(tp, actual)
        out[f"{label}_predicted"] = predicted
        out[f"{label}_actual"] = actual
    story = cell["duplicate"]["duplicate"] + cell["duplicate"]["similar"]
    story += cell["similar"]["duplicate"] + cell["similar"]["similar"]
    out["same_story_recall"] = ratio(
        story, sum(cell["duplicate"].values()) + sum(cell["similar"].values())
    )
    out["different_related"] = cell["different"]["duplicate"] + cell["different"]["similar"]
    out["different"] = sum(cell["different"].values())
    return out


def _family(doc: Mapping[str, Any]) -> str:
    synth = doc.get("synth", {})
    return str(synth.get("copy_of") or doc["id"])


def article_level(
    docs: Sequence[Mapping[str, Any]], decisions: Mapping[str, Decision]
) -> dict[str, Any]:
    """Decision status per role, and ``duplicate`` decisions pointing into another story."""
    family = {str(d["id"]): _family(d) for d in docs}
    status: dict[str, Counter[str]] = {}
    wrong: list[dict[str, str]] = []
    for d in docs:
        dec = decisions.get(str(d["id"]))
        role = str(d.get("synth", {}).get("role", "original"))
        status.setdefault(role, Counter())[dec.status if dec else "refused"] += 1
        if (
            dec is not None
            and dec.status == "duplicate"
            and dec.duplicate_of is not None
            and family.get(dec.duplicate_of) != family[str(d["id"])]
        ):
            wrong.append({"id": dec.id, "duplicate_of": dec.duplicate_of})
    n_dup = sum(c["duplicate"] for c in status.values())
    return {
        "status": {k: dict(v) for k, v in sorted(status.items())},
        "duplicates": n_dup,
        "wrong_story_duplicates": len(wrong),
        "duplicate_precision_article": (n_dup - len(wrong)) / n_dup if n_dup else None,
        "wrong_examples": wrong[:10],
    }


# --- threshold curves -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PairEvidence:
    """What the stream's verifier sees for each pair: SimHash distance, exact shingle
    Jaccard and containment (shared shingles / the smaller set), as float arrays; plus
    ``contained_new``: the share of the *later* article's shingles found in the earlier one
    (directed containment: 1.0 when the new article adds nothing) and ``contained_old``: the
    share of the earlier article's shingles found in the later one, for the what-if rules."""

    distance: F64
    jaccard: F64
    containment: F64
    contained_new: F64
    contained_old: F64

    def verified(
        self, config: StreamConfig, min_jaccard: float | None = None, min_cont: float | None = None
    ) -> npt.NDArray[np.bool_]:
        """The verified ``duplicate`` rule (``verify="shingles"``) at these thresholds."""
        j = config.duplicate_min_jaccard if min_jaccard is None else min_jaccard
        c = config.duplicate_min_containment if min_cont is None else min_cont
        gate = self.distance <= config.similar_max_distance
        return gate & ((self.jaccard >= j) | (self.containment >= c))


def pair_evidence(
    pairs: Sequence[Mapping[str, Any]],
    texts: Mapping[str, str],
    config: StreamConfig,
    position: Mapping[str, int] | None = None,
) -> PairEvidence:
    """SimHash distance, Jaccard and containment of every pair, with the stream's signers.

    ``position``: ingest position of each id (the later of a pair is the new article);
    without it ``id2`` is taken as the later one."""
    ids = sorted({str(x) for p in pairs for x in (p["id1"], p["id2"])})
    fp: dict[str, int] = {}
    sh: dict[str, npt.NDArray[Any]] = {}
    for i in ids:
        sig = sign_simhash(texts[i], config.simhash)
        fp[i] = int(sig.values[0]) if len(sig) else 0
        sh[i] = sign_shingles(texts[i], config.shingles).values
    dist: list[int] = []
    jac: list[float] = []
    cont: list[float] = []
    new: list[float] = []
    old: list[float] = []
    for p in pairs:
        a, b = str(p["id1"]), str(p["id2"])
        if position is not None and position.get(a, -1) > position.get(b, -1):
            a, b = b, a
        dist.append((fp[a] ^ fp[b]).bit_count())
        x, y = sh[a], sh[b]
        inter = int(np.intersect1d(x, y, assume_unique=True).size) if x.size and y.size else 0
        union = x.size + y.size - inter
        smaller = min(x.size, y.size)
        jac.append(inter / union if union else 1.0)
        cont.append(inter / smaller if smaller else 0.0)
        new.append(inter / y.size if y.size else 0.0)
        old.append(inter / x.size if x.size else 0.0)
    f = np.float64
    return PairEvidence(
        np.array(dist, f),
        np.array(jac, f),
        np.array(cont, f),
        np.array(new, f),
        np.array(old, f),
    )


def what_if(
    evidence: PairEvidence, gold: Mapping[str, Sequence[str]], config: StreamConfig
) -> dict[str, dict[str, dict[str, float]]]:
    """P/R/F1 of ``duplicate`` under alternative decision rules, per label rule: the
    stream's rule with SimHash candidates and with every pair a candidate, and the rule with
    *directed* containment (only a new article contained in the stored one is a duplicate,
    not one that contains it and adds more), and the editorial label's two conditions put on
    shingles (at most a fifth of the new article new, at least half of the stored one kept)."""
    gate = evidence.distance <= config.similar_max_distance
    j = evidence.jaccard >= config.duplicate_min_jaccard
    sym = evidence.containment >= config.duplicate_min_containment
    directed = evidence.contained_new >= config.duplicate_min_containment
    # The editorial label's shape on shingles, thresholds taken from its definition (at most
    # a fifth new, at least half of the stored article kept), not fitted to these pairs.
    shaped = (evidence.contained_new >= 0.8) & (evidence.contained_old >= 0.5)
    rules = {
        "stream rule, SimHash candidates (default)": gate & (j | sym),
        "stream rule, every pair a candidate": j | sym,
        "directed containment, SimHash candidates": gate & (j | directed),
        "directed containment, every pair a candidate": j | directed,
        "new-in-stored >= 0.8 and stored-in-new >= 0.5, SimHash candidates": gate & shaped,
        "new-in-stored >= 0.8 and stored-in-new >= 0.5, every pair a candidate": shaped,
    }
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, pred in rules.items():
        out[name] = {
            rule: _prf(pred, np.array([g == "duplicate" for g in labels]))
            for rule, labels in gold.items()
        }
    return out


def _prf(pred: npt.NDArray[np.bool_], y: npt.NDArray[np.bool_]) -> dict[str, float]:
    # precision_recall_f1 predicts "score >= threshold": pass the decision as a 0/1 score.
    r = precision_recall_f1(pred.astype(np.float64), y, 0.5)
    return {"precision": round(r.precision, 5), "recall": round(r.recall, 5), "f1": round(r.f1, 5)}


def threshold_curves(
    evidence: PairEvidence, gold: Mapping[str, Sequence[str]], config: StreamConfig
) -> dict[str, Any]:
    """P/R/F1 of the ``duplicate`` decision (duplicate vs the rest) for each label rule as
    the SimHash distance, the Jaccard threshold and the containment threshold vary (the
    other thresholds at their defaults)."""
    distances = list(range(0, 33))
    grid = [round(x, 2) for x in np.linspace(0.0, 1.0, 101)]
    out: dict[str, Any] = {"distance": distances, "grid": grid, "rules": {}}
    for rule, labels in gold.items():
        y = np.array([g == "duplicate" for g in labels])
        out["rules"][rule] = {
            "raw_distance": [_prf(evidence.distance <= d, y) for d in distances],
            "jaccard": [_prf(evidence.verified(config, min_jaccard=t), y) for t in grid],
            "containment": [_prf(evidence.verified(config, min_cont=t), y) for t in grid],
            "jaccard_ungated": [
                _prf((evidence.jaccard >= t) | (evidence.containment >= 0.9), y) for t in grid
            ],
            "default": _prf(evidence.verified(config), y),
            "raw_default": _prf(evidence.distance <= config.duplicate_max_distance, y),
        }
    return out


def _best(points: Sequence[Mapping[str, float]], xs: Sequence[float]) -> dict[str, float]:
    i = int(np.argmax([p["f1"] for p in points]))
    return {"threshold": float(xs[i]), **points[i]}


def plot_threshold_curves(curves: Mapping[str, Any], config: StreamConfig, path: Path) -> Path:
    """Four panels (SimHash distance; Jaccard, containment with SimHash candidates; Jaccard
    with every pair a candidate): P/R/F1 per label rule."""
    from neardup.evaluation.plots import _pyplot, _save

    plt = _pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(19, 4.2))
    panels = (
        ("raw_distance", curves["distance"], "SimHash distance d (duplicate when <= d)",
         config.duplicate_max_distance),
        ("jaccard", curves["grid"], "Jaccard threshold (containment >= "
         f"{config.duplicate_min_containment}, d <= {config.similar_max_distance})",
         config.duplicate_min_jaccard),
        ("containment", curves["grid"], "containment threshold (Jaccard >= "
         f"{config.duplicate_min_jaccard}, d <= {config.similar_max_distance})",
         config.duplicate_min_containment),
        ("jaccard_ungated", curves["grid"], "Jaccard threshold, every pair a candidate "
         f"(containment >= {config.duplicate_min_containment})", config.duplicate_min_jaccard),
    )  # fmt: skip
    styles = {"editorial": "-", "bag80": "--"}
    colours = {"precision": "tab:blue", "recall": "tab:orange", "f1": "tab:green"}
    for ax, (key, xs, label, default) in zip(axes, panels, strict=True):
        for rule, data in curves["rules"].items():
            for metric, colour in colours.items():
                ax.plot(
                    xs,
                    [p[metric] for p in data[key]],
                    styles.get(rule, ":"),
                    color=colour,
                    label=f"{metric} ({rule})",
                )
        ax.axvline(default, color="k", linestyle=":", linewidth=1)
        ax.set_xlabel(label, fontsize=8)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("duplicate vs rest")
    axes[0].legend(fontsize=7, loc="lower right")
    fig.suptitle("Stream duplicate decision on the Reuters perturbation benchmark")
    return _save(fig, path)


# --- exact duplicates -------------------------------------------------------------------------


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)


def exact_groups(
    reuters: Path, groups_path: Path, store_dir: Path, config: StreamConfig | None = None
) -> dict[str, Any]:
    """All of Reuters through the stream (file order); is every derived exact-duplicate group
    one group (every member with the same original)?"""
    docs = list(_jsonl(reuters))
    groups = [[str(i) for i in g["ids"]] for g in _jsonl(groups_path)]
    members_all = [i for g in groups for i in g]
    decisions, refused, seconds, original = run_stream(
        docs, store_dir, config, originals_of=members_all
    )
    found = 0
    split: list[list[str]] = []
    refused_members = 0
    took_over = 0
    for g in groups:
        members = [i for i in g if i in decisions]
        refused_members += len(g) - len(members)
        # The store's current original: an earlier-dated member ingested later takes over.
        roots = {original[i] for i in members}
        took_over += sum(1 for i in members if decisions[i].took_over)
        if len(roots) == 1 and members:
            found += 1
        else:
            split.append(g)
    status = Counter(d.status for d in decisions.values())
    return {
        "articles": len(docs),
        "ingested": len(decisions),
        "refused": len(refused),
        "seconds": seconds,
        "status": dict(status),
        "groups": len(groups),
        "groups_found": found,
        "groups_split": split[:10],
        "refused_members": refused_members,
        "takeovers_in_groups": took_over,
    }


# --- the whole evaluation ---------------------------------------------------------------------


def _variant(
    order: Sequence[Mapping[str, Any]],
    result: SynthResult,
    scfg: StreamConfig,
    batch_size: int,
) -> tuple[dict[str, Any], list[str]]:
    """One stream configuration over the benchmark: counts, rates, article-level checks."""
    with tempfile.TemporaryDirectory(prefix="neardup-stream-quality-") as tmp:
        decisions, refused, ingest_s, _ = run_stream(order, Path(tmp), scfg, batch_size)
    position = {str(d["id"]): i for i, d in enumerate(order)}
    verdicts = pair_verdicts(result.pairs, decisions, position)
    edits = [str(p["edit"]) for p in result.pairs]
    gold = {r: [str(p["labels"][r]) for p in result.pairs] for r in LABEL_RULES}
    counts = {r: count_by_edit(edits, gold[r], verdicts) for r in LABEL_RULES}
    out = {
        "stream_config": {
            "verify": scfg.verify,
            "candidates": scfg.candidates,
            "duplicate_max_distance": scfg.duplicate_max_distance,
            "similar_max_distance": scfg.similar_max_distance,
            "duplicate_min_jaccard": scfg.duplicate_min_jaccard,
            "duplicate_min_containment": scfg.duplicate_min_containment,
        },
        "refused": refused,
        "ingest_seconds": ingest_s,
        "counts": counts,
        "rates": {r: {e: rates(c) for e, c in counts[r].items()} for r in LABEL_RULES},
        "articles": article_level(order, decisions),
    }
    return out, verdicts


def stream_quality(
    reuters: Path,
    img: Path | None,
    config: StreamQualityConfig | None = None,
    stream_configs: Mapping[str, StreamConfig] | None = None,
    groups_path: Path | None = None,
    synth_config: SynthConfig | None = None,
) -> dict[str, Any]:
    """Run the stream on the perturbation benchmark (and the exact groups when
    ``groups_path`` is given); write ``img/stream_thresholds.png`` when ``img`` is given.

    ``stream_configs``: named stream configurations to compare (default: ``"default"``, the
    stream's defaults, and ``"simhash+lsh"``, its documented high-recall candidate option).
    The threshold curves and the exact groups use the first one.
    """
    cfg = config or StreamQualityConfig()
    variants = dict(
        stream_configs
        or {"default": StreamConfig(), "simhash+lsh": StreamConfig(candidates="simhash+lsh")}
    )
    scfg = next(iter(variants.values()))
    synth_cfg = synth_config or SynthConfig(max_originals=cfg.max_originals, seed=cfg.seed)
    t0 = time.perf_counter()
    result = synthesize(_jsonl(reuters), synth_cfg)
    order = stream_order(result)
    runs: dict[str, Any] = {}
    verdicts: dict[str, list[str]] = {}
    for name, vcfg in variants.items():
        runs[name], verdicts[name] = _variant(order, result, vcfg, cfg.batch_size)
    gold = {r: [str(p["labels"][r]) for p in result.pairs] for r in LABEL_RULES}
    texts = {str(d["id"]): str(d["text"]) for d in result.docs}
    position = {str(d["id"]): i for i, d in enumerate(order)}
    evidence = pair_evidence(result.pairs, texts, scfg, position)
    first = next(iter(variants))
    agreement: dict[str, Any] = {"variant": first, "pairs": len(result.pairs), "agree": None}
    if scfg.candidates == "simhash" and scfg.verify == "shingles":
        # The stream's own verdicts against the offline rule at the same thresholds.
        near = evidence.distance <= scfg.similar_max_distance
        offline = np.where(evidence.verified(scfg), "duplicate", np.where(near, "similar", "none"))
        agreement["agree"] = int(np.sum(offline == np.array(verdicts[first])))
    curves = threshold_curves(evidence, gold, scfg)
    beyond = evidence.distance > scfg.similar_max_distance
    gate_misses = {
        rule: {
            label: {
                "pairs": int(np.sum(np.array(g) == label)),
                "beyond_candidate_distance": int(np.sum((np.array(g) == label) & beyond)),
            }
            for label in ("duplicate", "similar")
        }
        for rule, g in gold.items()
    }
    best = {
        rule: {
            "raw_distance": _best(c["raw_distance"], curves["distance"]),
            "jaccard": _best(c["jaccard"], curves["grid"]),
            "containment": _best(c["containment"], curves["grid"]),
            "jaccard_ungated": _best(c["jaccard_ungated"], curves["grid"]),
            "default": c["default"],
            "raw_default": c["raw_default"],
        }
        for rule, c in curves["rules"].items()
    }
    if img is not None:
        plot_threshold_curves(curves, scfg, img / "stream_thresholds.png")
    out: dict[str, Any] = {
        "config": cfg.to_dict(),
        "synth_config": synth_cfg.to_dict(),
        "docs": len(order),
        "pairs": len(result.pairs),
        "labels": {r: dict(Counter(gold[r])) for r in LABEL_RULES},
        "variants": runs,
        "offline_agreement": agreement,
        "candidate_gate": gate_misses,
        "what_if": what_if(evidence, gold, scfg),
        "best": best,
        "curves": curves,
    }
    if groups_path is not None:
        with tempfile.TemporaryDirectory(prefix="neardup-stream-exact-") as tmp:
            out["exact_groups"] = exact_groups(reuters, groups_path, Path(tmp), scfg)
    out["seconds"] = time.perf_counter() - t0
    out["date"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return out


# --- Markdown ---------------------------------------------------------------------------------


def _pct(x: Any, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _f1(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 2 * p * r / (p + r) if p + r else 0.0


def render_markdown(r: Mapping[str, Any], image: str = "img/stream_thresholds.png") -> list[str]:
    """The "Stream decisions" section of docs/evaluation.md, from :func:`stream_quality`."""
    lines: list[str] = []
    add = lines.append
    variants = r["variants"]
    first = next(iter(variants))
    v0 = variants[first]
    sc = v0["stream_config"]
    syn = r["synth_config"]
    add("## 6. Stream decisions (`NewsIndex`, issue 3)\n")
    add(
        f"The perturbation benchmark ({syn['max_originals']} Reuters originals, seed "
        f"{syn['seed']}; {r['docs']} documents, {r['pairs']} labelled pairs) through "
        "`neardup.api.NewsIndex` (SQLite in a temporary directory): the originals first in date "
        "order, then the copies in date order.  A pair's verdict is read from the later "
        "article's decision: `duplicate` or `similar` when its evidence lists the earlier one "
        "with that verdict, `none` when the stream did not relate them.  Configurations: "
        + "; ".join(
            f"`{name}` (candidates `{v['stream_config']['candidates']}`, verify "
            f"`{v['stream_config']['verify']}`, {len(v['refused'])} refused, ingest "
            f"{v['ingest_seconds']:.1f} s wall)"
            for name, v in variants.items()
        )
        + f".  Defaults: candidates within SimHash distance {sc['similar_max_distance']}; "
        f"duplicate when Jaccard >= {sc['duplicate_min_jaccard']} or containment >= "
        f"{sc['duplicate_min_containment']}, else similar.\n"
    )
    add("### Overall, per configuration and label rule\n")
    add(
        "| configuration | rule | duplicate P | duplicate R | duplicate F1 | similar P | "
        "similar R | same story R | different pairs related | duplicates into a wrong story |"
    )
    add("|---|---|---|---|---|---|---|---|---|---|")
    for name, v in variants.items():
        arts = v["articles"]
        for rule, per in v["rates"].items():
            a = per["all"]
            add(
                f"| `{name}` | {rule} | {_pct(a['duplicate_precision'])} | "
                f"{_pct(a['duplicate_recall'])} | "
                f"**{_pct(_f1(a['duplicate_precision'], a['duplicate_recall']))}** | "
                f"{_pct(a['similar_precision'])} | {_pct(a['similar_recall'])} | "
                f"{_pct(a['same_story_recall'])} | {a['different_related']} of {a['different']} | "
                f"{arts['wrong_story_duplicates']} of {arts['duplicates']} |"
            )
    add(
        "\n*Duplicates into a wrong story*: article-level `duplicate` decisions whose "
        "`duplicate_of` is neither the article's own original nor a copy of it (over all "
        "decisions, labelled pairs or not)."
    )
    gate = r.get("candidate_gate", {})
    if gate:
        add(
            "Candidate stage: "
            + "; ".join(
                f"{rule}: {g['duplicate']['beyond_candidate_distance']} of "
                f"{g['duplicate']['pairs']} duplicate pairs and "
                f"{g['similar']['beyond_candidate_distance']} of {g['similar']['pairs']} "
                f"similar pairs are further than SimHash distance {sc['similar_max_distance']}"
                ' (never candidates with `candidates="simhash"`)'
                for rule, g in gate.items()
            )
            + "."
        )
    agree = r.get("offline_agreement", {})
    if agree.get("agree") is not None:
        add(
            f"Check: on {agree['agree']} of {agree['pairs']} pairs the `{agree['variant']}` "
            "stream's verdict equals the offline rule recomputed from the pair's SimHash "
            "distance, Jaccard and containment (the threshold curves below use that rule)."
        )
    add("")
    add(f"### Per edit type (`{first}` configuration)\n")
    rules = list(v0["rates"])
    head = " | ".join(f"dup P ({rl}) | dup R ({rl}) | sim P ({rl}) | sim R ({rl})" for rl in rules)
    others = [n for n in variants if n != first]
    extra = " | ".join(f"dup P `{n}` | dup R `{n}`" for n in others)
    add(
        f"| edit | pairs | gold dup/sim ({rules[0]}) | {head}"
        + (f" | {extra}" if extra else "")
        + " |"
    )
    ncols = 3 + 4 * len(rules) + 2 * len(others)
    add("|---" * ncols + "|")
    edits = [e for e in v0["rates"][rules[0]] if e != "all"] + ["all"]
    for e in edits:
        g = v0["rates"][rules[0]][e]
        pairs = sum(sum(row.values()) for row in v0["counts"][rules[0]][e].values())
        cells = []
        for rl in rules:
            x = v0["rates"][rl][e]
            cells += [
                _pct(x["duplicate_precision"], 2),
                _pct(x["duplicate_recall"], 2),
                _pct(x["similar_precision"], 2),
                _pct(x["similar_recall"], 2),
            ]
        for n in others:
            x = variants[n]["rates"][rules[0]][e]
            cells += [_pct(x["duplicate_precision"], 2), _pct(x["duplicate_recall"], 2)]
        parts = []
        if g["duplicate_actual"] or g["similar_actual"]:
            parts.append(f"{g['duplicate_actual']}/{g['similar_actual']}")
        if g["different"]:
            parts.append(f"{g['different']} different, {g['different_related']} related")
        gold = "; ".join(parts)
        add(f"| {e} | {pairs} | {gold} | " + " | ".join(cells) + " |")
    add(
        "\n`–`: nothing predicted (precision) or nothing to find (recall).  Negatives and "
        "shared quotations have no duplicate or similar pairs; their *related* count is the "
        "number the stream called duplicate or similar (false positives).\n"
    )
    add("### Threshold curves of the duplicate decision\n")
    add(
        "Precision, recall and F1 of `duplicate` vs the rest over the labelled pairs, as one "
        "threshold moves and the others stay at their defaults: the SimHash distance alone "
        '(seed 003\'s raw rule, `verify="none"`), the Jaccard threshold and the containment '
        f"threshold of the verified rule (candidates within distance "
        f"{sc['similar_max_distance']}); *ungated*: the verified rule with every pair a "
        "candidate (what complete candidates, e.g. MinHash LSH, could reach).\n"
    )
    add(
        "| rule | raw d <= 3 (P/R/F1) | best raw d | stream defaults (P/R/F1) | best Jaccard "
        "thr (F1) | best containment thr (F1) | best ungated Jaccard thr (P/R/F1) |"
    )
    add("|---|---|---|---|---|---|---|")
    for rule, b in r["best"].items():

        def prf(x: Mapping[str, float]) -> str:
            return f"{x['precision']:.3f}/{x['recall']:.3f}/{x['f1']:.3f}"

        add(
            f"| {rule} | {prf(b['raw_default'])} | d <= {b['raw_distance']['threshold']:.0f} "
            f"({prf(b['raw_distance'])}) | {prf(b['default'])} | "
            f"{b['jaccard']['threshold']:.2f} ({b['jaccard']['f1']:.3f}) | "
            f"{b['containment']['threshold']:.2f} ({b['containment']['f1']:.3f}) | "
            f"{b['jaccard_ungated']['threshold']:.2f} ({prf(b['jaccard_ungated'])}) |"
        )
    add(f"\n![Stream threshold curves]({image})\n")
    wi = r.get("what_if")
    if wi:
        add("### What-if decision rules (offline, same pairs)\n")
        add(
            "The duplicate rule recomputed from each pair's evidence under alternatives: "
            "every pair a candidate (complete candidates; MinHash LSH approaches it), and "
            "*directed* containment (a new article is a duplicate when >= "
            f"{sc['duplicate_min_containment']} of *its own* shingles are in the stored one, "
            "so a copy that contains the story and adds much more is not).\n"
        )
        rules_wi = list(next(iter(wi.values())))
        add("| decision rule | " + " | ".join(f"P/R/F1 ({rl})" for rl in rules_wi) + " |")
        add("|---" * (len(rules_wi) + 1) + "|")
        for name, per in wi.items():
            cells = [
                f"{per[rl]['precision']:.3f}/{per[rl]['recall']:.3f}/**{per[rl]['f1']:.3f}**"
                for rl in rules_wi
            ]
            add(f"| {name} | " + " | ".join(cells) + " |")
        add("")
    _render_reading(r, add)
    ex = r.get("exact_groups")
    if ex:
        add("### Reuters derived exact-duplicate groups through the stream\n")
        add(
            f"All {ex['articles']} Reuters articles in file (date) order: {ex['ingested']} "
            f"ingested, {ex['refused']} refused (empty text); decisions "
            + ", ".join(f"{k} {v}" for k, v in sorted(ex["status"].items()))
            + f"; {ex['seconds']:.1f} s.  **{ex['groups_found']} of {ex['groups']}** derived "
            "exact-duplicate groups end up as one group (every member with the same original "
            f"in the store; {ex['takeovers_in_groups']} by takeover of an earlier-dated member "
            f"ingested later); {ex['refused_members']} group members refused."
            + (
                "  Split groups: " + ", ".join(" / ".join(g) for g in ex["groups_split"])
                if ex["groups_split"]
                else ""
            )
            + "\n"
        )
    return lines


def _render_reading(r: Mapping[str, Any], add: Any) -> None:
    """What the numbers say about the stream's defaults (every figure from this run)."""
    variants = r["variants"]
    names = list(variants)
    sc = variants[names[0]]["stream_config"]
    rule = "editorial"
    a0 = variants[names[0]]["rates"][rule]["all"]
    gate = r.get("candidate_gate", {}).get(rule)
    best = r["best"][rule]
    add("### Reading (editorial rule)\n")
    if gate:
        g = gate["duplicate"]
        add(
            f"- **The candidate stage caps recall.**  {g['beyond_candidate_distance']} of "
            f"{g['pairs']} duplicate pairs are further than SimHash distance "
            f'{sc["similar_max_distance"]}, so with `candidates="simhash"` they can never be '
            f"found: duplicate recall is {_pct(a0['duplicate_recall'])} at precision "
            f"{_pct(a0['duplicate_precision'])}.  Lowest duplicate recall by edit type: "
            + ", ".join(
                f"`{e}` {_pct(x['duplicate_recall'], 2)}"
                for e, x in _worst(variants[names[0]]["rates"][rule], "duplicate_recall")
            )
            + "."
        )
    add(
        "- **Within the candidates the verified thresholds matter little.**  The best Jaccard "
        f"threshold gives F1 {best['jaccard']['f1']:.3f} (at {best['jaccard']['threshold']:.2f}) "
        f"against {best['default']['f1']:.3f} at the default {sc['duplicate_min_jaccard']}; "
        f"the containment threshold likewise ({best['containment']['f1']:.3f} at "
        f"{best['containment']['threshold']:.2f}).  Seed 003's raw rule (d <= "
        f"{sc['duplicate_max_distance']}, no verification) has F1 "
        f"{best['raw_default']['f1']:.3f}."
    )
    if len(names) > 1:
        a1 = variants[names[1]]["rates"][rule]["all"]
        add(
            f"- **`{names[1]}`** raises duplicate recall to {_pct(a1['duplicate_recall'])} "
            f"(precision {_pct(a1['duplicate_precision'])}, F1 "
            f"{_pct(_f1(a1['duplicate_precision'], a1['duplicate_recall']))} vs "
            f"{_pct(_f1(a0['duplicate_precision'], a0['duplicate_recall']))}); lowest "
            "duplicate precision by edit type: "
            + ", ".join(
                f"`{e}` {_pct(x['duplicate_precision'], 2)}"
                for e, x in _worst(variants[names[1]]["rates"][rule], "duplicate_precision")
            )
            + f" (containment >= {sc['duplicate_min_containment']} is of the smaller set, so a "
            "copy that contains the whole story plus other material passes)."
        )
    add(
        f"- **`similar` is rarely right**: recall {_pct(a0['similar_recall'])}.  Copies "
        "edited beyond a duplicate are mostly further than the candidate distance, and those "
        "within it pass the duplicate rule (containment of the smaller set)."
    )
    add(
        f"- Different stories on the same topic and shared quotations: "
        f"{a0['different_related']} of {a0['different']} pairs related by the stream; "
        f"{variants[names[0]]['articles']['wrong_story_duplicates']} duplicate decisions "
        "point into a wrong story.\n"
    )


def _worst(
    per_edit: Mapping[str, Mapping[str, Any]], key: str, n: int = 4
) -> list[tuple[str, Mapping[str, Any]]]:
    """The ``n`` edit types with the lowest ``key`` (those where it is defined)."""
    rows = [(e, x) for e, x in per_edit.items() if e != "all" and x[key] is not None]
    return sorted(rows, key=lambda ex: (ex[1][key], ex[0]))[:n]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m neardup.evaluation.stream_quality [--data DIR] [--max-originals N]``:
    prints the "Stream decisions" Markdown section (the full report runs it as section 6)."""
    parser = argparse.ArgumentParser(prog="python -m neardup.evaluation.stream_quality")
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("NEARDUP_DATA", "../shared/data"))
    )
    parser.add_argument("--max-originals", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--img", type=Path, default=None, help="write stream_thresholds.png here")
    parser.add_argument("--json", type=Path, default=None, help="write all figures here")
    args = parser.parse_args(argv)
    reuters = args.data / "reuters21578" / "docs.jsonl.gz"
    groups = args.data / "reuters21578" / "labels_derived_exact_dups.jsonl.gz"
    if not reuters.exists():
        print(f"error: {reuters} not found (use --data)", file=sys.stderr)
        return 2
    result = stream_quality(
        reuters,
        args.img,
        StreamQualityConfig(max_originals=args.max_originals, seed=args.seed),
        groups_path=groups if groups.exists() else None,
    )
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print("\n".join(render_markdown(result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
