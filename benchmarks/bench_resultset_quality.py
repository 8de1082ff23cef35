"""Result-set dedup quality: the coverage sketch against the rule it estimates, and the others.

A pair (A, B) is put through ``dedup_result_set([A, B])`` (two-item result sets: exactly the
decision the result set makes for the pair, candidate condition included) and scored
*duplicate vs the rest* against the pair's label, and against ``judge(A, B).label ==
"duplicate"`` (the rule the sketch estimates: the *agreement* column).

Data, split by the protocol of docs/eval.md (choose on one part, report on another):

* ``synth-choose``: ``neardup synth`` over the first eligible Reuters-21578 articles (seed 0,
  the project's perturbation benchmark), plus a *reflowed* copy of every original (its
  hard-wrapped lines joined into one line per paragraph; a duplicate);
* ``synth-report``: the same generator over Reuters articles the first set does not use
  (from article 6000 on, seed 1), plus reflowed copies;
* ``prov-0`` (choose) and ``prov-1`` (report): the read-labelled real pairs of
  ``provenance_news_2018_dev`` (``labels_read.jsonl``), split by their pair ids ``0-*`` and
  ``1-*``.

Methods: ``rule`` (``neardup.rule.judge``, exact), ``coverage`` (the default scheme at its
defaults), ``sentences`` (seed 000's sentence sketch at 0.5), ``datasketch`` (MinHash, 128
permutations of word 4-shingles, what a user would otherwise do, at 0.5 and at the Jaccard
threshold with the best F1 on the choosing sets).  Then a sweep of the sketch's parameters
(``sample_size`` x ``max_word_count``) on every set: the defaults were chosen from the
choosing sets' columns (agreement with the rule and F1), the reporting sets' columns are
reported as they came.

Run:  .venv/bin/python benchmarks/bench_resultset_quality.py   (a few minutes)
Writes benchmarks/results/resultset_quality.json.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
from collections.abc import Iterable
from typing import Any

import numpy as np

from _common import DATA, prf, read_reuters, save
from neardup.detect.resultset import ResultSetDeduper
from neardup.evaluation.methods import get_method
from neardup.evaluation.synth import SynthConfig, synthesize
from neardup.rule import RuleConfig, decide, pair_features, profile
from neardup.rule.coverage import CoverageSketchConfig, estimate, is_duplicate
from neardup.shingles import token_hashes
from neardup.sketch import Signature, sign
from neardup.sketch.coverage import sketch_values
from neardup.sketch.shingleset import TOKEN_SEED

PROVENANCE = DATA / "provenance_news_2018_dev"
REPORT_OFFSET = 6000  # synth-report draws its originals from here on
SAMPLE_SIZES = (16, 32, 48, 64, 96, 128)
MAX_WORD_COUNTS = (4, 8, 15)
RULE = RuleConfig()
DEFAULTS = CoverageSketchConfig()
DEDUP = ResultSetDeduper(max_entries=0)

Pair = tuple[str, str, str, str]  # id a, id b, label, group (edit type or half)


def reflow(text: str) -> str:
    """Hard-wrapped lines joined: one line per paragraph (blank or indented lines start one)."""
    paragraphs = re.split(r"\n[ \t]*\n|\n(?=[ \t])", text)
    return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())


def synth_set(records: Iterable[dict[str, Any]], seed: int) -> tuple[dict[str, str], list[Pair]]:
    result = synthesize(records, SynthConfig(seed=seed))
    docs = {d["id"]: d["text"] for d in result.docs}
    pairs = [(p["id1"], p["id2"], p["label"], p["edit"]) for p in result.pairs]
    for d in result.docs:
        if d.get("synth", {}).get("role") == "original":
            copy_id = d["id"] + "~reflow"
            docs[copy_id] = reflow(d["text"])
            pairs.append((d["id"], copy_id, "duplicate", "reflow"))
    return docs, pairs


def provenance() -> tuple[dict[str, str], dict[str, list[Pair]]]:
    docs: dict[str, str] = {}
    with gzip.open(PROVENANCE / "docs.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            docs[row["id"]] = row["text"]
    halves: dict[str, list[Pair]] = {"prov-0": [], "prov-1": []}
    for line in (PROVENANCE / "labels_read.jsonl").read_text().splitlines():
        row = json.loads(line)
        halves[f"prov-{row['pair'].split('-')[0]}"].append(
            (row["a"], row["b"], row["label"], row["label"])
        )
    return docs, halves


class Signed:
    """Per document: the rule's profile, the word hashes, and signatures by method."""

    def __init__(self, docs: dict[str, str]) -> None:
        self.docs = docs
        self.profiles = {i: profile(t, RULE) for i, t in docs.items()}
        self.words = {i: token_hashes(t, RULE.text, TOKEN_SEED) for i, t in docs.items()}
        self.sentences = {i: sign(t, "sentences") for i, t in docs.items()}
        minhash = get_method("datasketch")
        self.minhash = {i: minhash.prepare(t) for i, t in docs.items()}
        self.minhash_compare = minhash.compare

    def coverage(self, sample_size: int, max_word_count: int) -> dict[str, Signature]:
        cfg = CoverageSketchConfig(sample_size=sample_size, max_word_count=max_word_count)
        out = {}
        for i, p in self.profiles.items():
            values = sketch_values(
                self.words[i],
                p.shingles,
                p.flags,
                width=RULE.width,
                sample_size=sample_size,
                max_word_count=max_word_count,
            )
            out[i] = Signature(cfg.scheme_id, values)
        return out


def pair_dup(sigs: dict[str, Signature], pairs: list[Pair], **kw: Any) -> np.ndarray:
    return np.array([DEDUP([sigs[a], sigs[b]], **kw)[1] == 0 for a, b, _, _ in pairs])


def scores(pred: np.ndarray, gold: np.ndarray, rule: np.ndarray) -> dict[str, Any]:
    return {**prf(pred, gold), "agreement_with_rule": round(float(np.mean(pred == rule)), 4)}


def by_group(pred: np.ndarray, gold: np.ndarray, pairs: list[Pair]) -> dict[str, Any]:
    out = {}
    for g in sorted({p[3] for p in pairs}):
        idx = np.array([p[3] == g for p in pairs])
        out[g] = {
            "pairs": int(idx.sum()),
            "duplicates": int(gold[idx].sum()),
            "called_duplicate": int(pred[idx].sum()),
            "correct": int((pred[idx] == gold[idx]).sum()),
        }
    return out


def evaluate(
    name: str, signed: Signed, pairs: list[Pair], minhash_threshold: float
) -> dict[str, Any]:
    gold = np.array([p[2] == "duplicate" for p in pairs])
    rule = np.array(
        [
            decide(pair_features(signed.profiles[a], signed.profiles[b], RULE.width), RULE)[0]
            == "duplicate"
            for a, b, *_ in pairs
        ]
    )
    mh = np.array(
        [signed.minhash_compare(signed.minhash[a], signed.minhash[b]) for a, b, *_ in pairs]
    )
    default = signed.coverage(DEFAULTS.sample_size, DEFAULTS.max_word_count)
    methods: dict[str, np.ndarray] = {
        "rule": rule,
        "coverage": pair_dup(default, pairs),
        "sentences@0.5": pair_dup(signed.sentences, pairs, threshold=0.5),
        "datasketch@0.5": mh >= 0.5,
        f"datasketch@{minhash_threshold}": mh >= minhash_threshold,
    }
    estimated = np.array(
        [
            is_duplicate(e.coverage_a, e.coverage_b, RULE)
            for e in (estimate(default[a], default[b]) for a, b, *_ in pairs)
        ]
    )
    out: dict[str, Any] = {
        "pairs": len(pairs),
        "duplicates": int(gold.sum()),
        # pairs whose estimated coverages make a duplicate that the candidate condition
        # (MIN_SHARED_KEYS shared sampled shingles) never compares
        "lost_by_candidate_condition": int(np.sum(estimated & ~methods["coverage"])),
        "methods": {m: scores(pred, gold, rule) for m, pred in methods.items()},
        "by_group": {m: by_group(methods[m], gold, pairs) for m in ("rule", "coverage")},
    }
    sweep = {}
    for size in SAMPLE_SIZES:
        for count in MAX_WORD_COUNTS:
            sigs = signed.coverage(size, count)
            pred = pair_dup(sigs, pairs)
            sweep[f"{size}/{count}"] = {
                **scores(pred, gold, rule),
                "mean_bytes": round(statistics.mean(len(s.to_bytes()) for s in sigs.values())),
                "max_bytes": max(len(s.to_bytes()) for s in sigs.values()),
            }
    out["sweep_sample_size/max_word_count"] = sweep
    cov = out["methods"]["coverage"]
    print(f"{name}: {len(pairs)} pairs; coverage {cov}; rule {out['methods']['rule']}")
    return out


def best_threshold(scored: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """The MinHash Jaccard threshold with the best F1 over the choosing sets together."""
    values = np.concatenate([v for v, _ in scored])
    gold = np.concatenate([g for _, g in scored])
    best, best_f1 = 0.5, -1.0
    for t in np.round(np.arange(0.05, 1.0, 0.05), 2):
        f1 = float(prf(values >= t, gold)["f1"])
        if f1 > best_f1:
            best, best_f1 = float(t), f1
    return best


def main() -> None:
    rows = list(read_reuters())
    sets: dict[str, tuple[dict[str, str], list[Pair]]] = {
        "synth-choose": synth_set(rows, 0),
        "synth-report": synth_set(rows[REPORT_OFFSET:], 1),
    }
    prov_docs, halves = provenance()
    for half, pairs in halves.items():
        sets[half] = (prov_docs, pairs)
    signed: dict[int, Signed] = {}
    signed_of: dict[str, Signed] = {}
    for name, (docs, _) in sets.items():
        key = id(docs)
        if key not in signed:
            signed[key] = Signed(docs)
        signed_of[name] = signed[key]
    choosing = []
    for name in ("synth-choose", "prov-0"):
        s, pairs = signed_of[name], sets[name][1]
        mh = np.array([s.minhash_compare(s.minhash[a], s.minhash[b]) for a, b, *_ in pairs])
        choosing.append((mh, np.array([p[2] == "duplicate" for p in pairs])))
    threshold = best_threshold(choosing)
    results: dict[str, Any] = {
        "protocol": "parameters chosen on synth-choose and prov-0, reported on synth-report "
        "and prov-1",
        "rule": RULE.to_dict(),
        "datasketch_threshold_chosen": threshold,
        "sets": {},
    }
    for name, (_, pairs) in sets.items():
        results["sets"][name] = evaluate(name, signed_of[name], pairs, threshold)
    print("wrote", save("resultset_quality", results, libraries=("neardup", "numpy", "datasketch")))


if __name__ == "__main__":
    main()
