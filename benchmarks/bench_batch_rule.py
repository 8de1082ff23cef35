"""Batch ``dedup``/``pairs`` on the near-duplicate rule: agreement with ``judge()``, quality on
read-labelled real news, and the recall lost at the candidate stage.

Three measurements, each printed and saved to ``benchmarks/results/batch_rule.json``:

1. **Labelled real news** (``provenance_news_2018_dev``: 570 scraped pages, 180 pairs labelled
   by reading).  Pairs ``0-*`` and ``1-*`` are two halves: the candidate settings were chosen
   looking at half 0 (and the synthetic set of seed 0), half 1 is reported as held out.  Per
   half: duplicate precision/recall/F1 against the readers' labels of the rule itself
   (``judge`` on the two texts), of ``pairs`` (relation = duplicate) and of ``dedup`` (same
   cluster; both clusterings); how often batch agrees with ``judge``: ``pairs``' relation
   (duplicate / partial / other; a pair no candidate source proposed counts as other) and
   ``dedup``'s same cluster against ``judge`` = duplicate; partial copies: the share of the
   pairs ``judge`` calls partial that ``pairs`` reports partial, and ``pairs``' partial
   against the readers' partial label.
2. **Candidate recall against every pair.**  On the 570 real pages, and on two perturbation
   benchmarks made by ``neardup synth`` from Reuters-21578 (seeds 0 and 1, default
   settings), every pair that shares a word shingle is judged by the rule's plain reference
   path (``neardup.rule.pair_features`` + ``decide``; a pair sharing no shingle can be
   neither a duplicate nor a partial copy).  For each candidate setting: candidate pairs,
   documents profiled, and the pairs the rule calls duplicate / partial that no candidate
   source proposed.
3. **Labelled synthetic pairs** (the ``labels.jsonl`` of each ``neardup synth`` set,
   ``duplicate`` against the rest): the rule, ``pairs`` and both ``dedup`` clusterings, and
   how often they agree with ``judge``.

Run: ``python benchmarks/bench_batch_rule.py`` (about 10 minutes on the shared 2-core machine;
``--skip-synth`` for the real data only).  Speed on the planted 1M corpus, today's engine
against this one: ``benchmarks/bench_batch_rule_speed.py``.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from _common import DATA, REUTERS, prf, save
from neardup.batch import DedupConfig, run
from neardup.rule import Profile, RuleConfig, decide, judge, pair_features, profile

PROVENANCE = DATA / "provenance_news_2018_dev"
SETTINGS: dict[str, DedupConfig] = {
    "lsh (Jaccard 0.5)": DedupConfig(candidates=("lsh",)),
    "passages": DedupConfig(candidates=("passages",)),
    "lsh + passages (default)": DedupConfig(),
}


def _oracle(texts: list[str], rule: RuleConfig) -> dict[tuple[int, int], str]:
    """The rule's label of every pair of texts sharing a shingle (reference path)."""
    profiles: list[Profile] = [profile(t, rule) for t in texts]
    index: dict[int, list[int]] = collections.defaultdict(list)
    for d, p in enumerate(profiles):
        for h in p.shingle_set.tolist():
            index[h].append(d)
    pairs = {(a, b) for docs in index.values() for i, a in enumerate(docs) for b in docs[i + 1 :]}
    out = {}
    for a, b in sorted(pairs):
        label, _, _ = decide(pair_features(profiles[a], profiles[b], rule.width), rule)
        out[(a, b)] = label
    return out


def candidate_recall(path: Path, texts: list[str]) -> dict[str, Any]:
    """Per candidate setting: pairs, profiled documents, and the rule's copies missed."""
    t0 = time.perf_counter()
    oracle = _oracle(texts, RuleConfig())
    copies = {
        label: {p for p, v in oracle.items() if v == label} for label in ("duplicate", "partial")
    }
    row: dict[str, Any] = {
        "documents": len(texts),
        "pairs_sharing_a_shingle": len(oracle),
        "rule_duplicates": len(copies["duplicate"]),
        "rule_partials": len(copies["partial"]),
        "oracle_seconds": round(time.perf_counter() - t0, 1),
        "settings": {},
    }
    for name, cfg in SETTINGS.items():
        result = run(path, cfg, mode="pairs")
        proposed = {tuple(p) for p in result.pairs.tolist()}
        missed = {label: len(want - proposed) for label, want in copies.items()}
        row["settings"][name] = {
            "candidate_pairs": result.summary.candidate_pairs,
            "profiled_documents": result.summary.profiled_documents,
            "missed_duplicates": missed["duplicate"],
            "missed_duplicate_share": round(
                missed["duplicate"] / max(1, len(copies["duplicate"])), 4
            ),
            "missed_partials": missed["partial"],
            "missed_partial_share": round(missed["partial"] / max(1, len(copies["partial"])), 4),
        }
        print(f"  {name:26s} {json.dumps(row['settings'][name])}", flush=True)
    return row


def _read(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def provenance_quality() -> dict[str, Any]:
    """Section 1: the labelled pairs of the real news, per half."""
    docs_path = PROVENANCE / "docs.jsonl.gz"
    docs = {d["id"]: d["text"] for d in _read(docs_path)}
    labels = _read(PROVENANCE / "labels_read.jsonl")
    profiles = {k: profile(v) for k, v in docs.items()}
    rule = {(x["a"], x["b"]): judge(profiles[x["a"]], profiles[x["b"]]).label for x in labels}
    pairs_run = run(docs_path, DedupConfig(), mode="pairs")
    relation = {
        tuple(p): pairs_run.verdicts.label(k) for k, p in enumerate(pairs_run.pairs.tolist())
    }
    clusters = {
        how: run(docs_path, DedupConfig(clusters=how)).labels for how in ("centers", "components")
    }
    index = {d: i for i, d in enumerate(pairs_run.ids)}

    def coarse(label: str) -> str:
        return label if label in ("duplicate", "partial") else "other"

    out: dict[str, Any] = {}
    for half in ("0", "1", "all"):
        chosen = [x for x in labels if half == "all" or x["pair"].startswith(half + "-")]
        gold = np.array([x["label"] == "duplicate" for x in chosen])
        gold_partial = np.array([x["label"] == "partial" for x in chosen])
        by_rule = [rule[(x["a"], x["b"])] for x in chosen]
        by_pairs = []
        for x in chosen:
            a, b = sorted((index[x["a"]], index[x["b"]]))
            by_pairs.append(relation.get((a, b), "not proposed"))
        rule_dup = np.array([v == "duplicate" for v in by_rule])
        row: dict[str, Any] = {
            "pairs": len(chosen),
            "rule": prf(rule_dup, gold),
            "pairs_relation_duplicate": prf(np.array([v == "duplicate" for v in by_pairs]), gold),
            "pairs_agree_with_judge": round(
                float(
                    np.mean(
                        [coarse(p) == coarse(r) for p, r in zip(by_pairs, by_rule, strict=True)]
                    )
                ),
                4,
            ),
        }
        for how, labels_of in clusters.items():
            same = np.array([labels_of[index[x["a"]]] == labels_of[index[x["b"]]] for x in chosen])
            row[f"dedup_{how}_same_cluster"] = prf(same, gold)
            row[f"dedup_{how}_agree_with_judge"] = round(float(np.mean(same == rule_dup)), 4)
        rule_partial = [v == "partial" for v in by_rule]
        found = [p == "partial" for p, r in zip(by_pairs, rule_partial, strict=True) if r]
        row["rule_partials"] = int(sum(rule_partial))
        row["rule_partials_found_by_pairs"] = int(sum(found))
        row["pairs_partial_vs_readers"] = prf(
            np.array([v == "partial" for v in by_pairs]), gold_partial
        )
        row["rule_partial_vs_readers"] = prf(np.array(rule_partial), gold_partial)
        out[f"half_{half}"] = row
        print(f"  half {half}: {json.dumps(row)}", flush=True)
    return out


def synth_quality(path: Path) -> dict[str, Any]:
    """The labelled pairs of a ``neardup synth`` benchmark (label ``duplicate`` against the
    rest): the rule, ``pairs`` and both ``dedup`` clusterings, and their agreement with
    ``judge``."""
    docs = _read(path)
    texts = {d["id"]: d["text"] for d in docs}
    labels = _read(path.with_name("labels.jsonl"))
    pairs_run = run(path, DedupConfig(), mode="pairs")
    index = {d: i for i, d in enumerate(pairs_run.ids)}
    relation = {
        tuple(p): pairs_run.verdicts.label(k) for k, p in enumerate(pairs_run.pairs.tolist())
    }
    gold = np.array([x["label"] == "duplicate" for x in labels])
    rule_dup = np.array(
        [judge(texts[x["id1"]], texts[x["id2"]]).label == "duplicate" for x in labels]
    )
    by_pairs = np.array(
        [
            relation.get(tuple(sorted((index[x["id1"]], index[x["id2"]])))) == "duplicate"
            for x in labels
        ]
    )
    row: dict[str, Any] = {
        "pairs": len(labels),
        "rule": prf(rule_dup, gold),
        "pairs_relation_duplicate": prf(by_pairs, gold),
        "pairs_agree_with_judge": round(float(np.mean(by_pairs == rule_dup)), 4),
    }
    for how in ("centers", "components"):
        labels_of = run(path, DedupConfig(clusters=how)).labels
        same = np.array([labels_of[index[x["id1"]]] == labels_of[index[x["id2"]]] for x in labels])
        row[f"dedup_{how}_same_cluster"] = prf(same, gold)
        row[f"dedup_{how}_agree_with_judge"] = round(float(np.mean(same == rule_dup)), 4)
    print(f"  labelled pairs: {json.dumps(row)}", flush=True)
    return row


def _synth(seed: int, folder: Path) -> Path:
    out = folder / f"synth-{seed}"
    # The console script installed beside this interpreter (what a user runs).
    cmd = [str(Path(sys.executable).with_name("neardup")), "synth", str(REUTERS / "docs.jsonl.gz")]
    subprocess.run([*cmd, "-o", str(out), "--seed", str(seed)], check=True, capture_output=True)
    return out / "docs.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-synth", action="store_true")
    parser.add_argument("--out", default="batch_rule")
    args = parser.parse_args()
    result: dict[str, Any] = {"benchmark": "batch dedup/pairs on the near-duplicate rule"}
    print("provenance_news_2018_dev, labelled pairs:", flush=True)
    result["provenance_labelled"] = provenance_quality()
    print("candidate recall, provenance_news_2018_dev (all pairs):", flush=True)
    docs_path = PROVENANCE / "docs.jsonl.gz"
    texts = [d["text"] for d in _read(docs_path)]
    result["candidates"] = {"provenance_news_2018_dev": candidate_recall(docs_path, texts)}
    if not args.skip_synth:
        with tempfile.TemporaryDirectory(prefix="neardup-synth-") as tmp:
            for seed in (0, 1):
                path = _synth(seed, Path(tmp))
                texts = [d["text"] for d in _read(path)]
                print(f"neardup synth seed {seed}:", flush=True)
                result.setdefault("synth_labelled", {})[f"seed_{seed}"] = synth_quality(path)
                print("  candidate recall (all pairs):", flush=True)
                result["candidates"][f"synth_seed_{seed}"] = candidate_recall(path, texts)
    print(f"saved {save(args.out, result)}")


if __name__ == "__main__":
    main()
