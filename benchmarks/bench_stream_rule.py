"""Where the stream loses duplicates and which decision rule to use: chosen on one half of the
Reuters perturbation benchmark, reported on the other (docs/stream.md, "Choosing the rule").

The perturbation benchmark of ``neardup.evaluation.synth`` (1,000 Reuters originals, seed 0,
labels under the ``editorial`` rule, never changed) is split by the original's Reuters id:
pairs whose original has an even number are the *tuning* half, odd the *held-out* half.  For
every labelled pair (earlier article A, later article B, in the stream's ingest order) it
computes what the stream sees, with the stream's own signers:

* ``distance``: SimHash Hamming distance (the SimHash candidate stage is ``distance <= 7``);
* ``lsh[np, t]``: whether MinHash LSH with ``np`` permutations, bands tuned for threshold
  ``t``, makes the pair a candidate (some band key equal), for each option tried;
* ``jaccard``, ``c_new`` = |A ∩ B| / |B| (how much of the new article is in the stored one),
  ``c_old`` = |A ∩ B| / |A| (how much of the stored article the new one covers), on the
  word 4-shingle sets.

Then, on the tuning half only, a grid over the directed rule ``duplicate = candidate and
c_new >= a and c_old >= b``, ``similar = candidate and not duplicate and max(c_new, c_old)
>= s`` (plus the stream's fixed ``jaccard >= 0.5`` route and 20 shared shingles) picks (a, b)
by duplicate F1 (ties: the larger, stricter threshold) and s as the smallest overlap at which
no different-story pair of the tuning half is related; the held-out half is scored once with
the chosen values.  Loss attribution: of the gold duplicates missed, how many were never
candidates vs rejected by verification.

Run:  /work/venv/bin/python benchmarks/bench_stream_rule.py     (about 1 minute)
Writes benchmarks/results/stream_rule.json.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

from _common import machine, prf, read_reuters, save
from neardup.detect.stream import StreamConfig
from neardup.evaluation.stream_quality import stream_order
from neardup.evaluation.synth import SynthConfig, synthesize
from neardup.index.lsh import LSHIndex, band_keys
from neardup.sketch.minhash import minhash_values
from neardup.sketch.shingleset import sign_shingles
from neardup.sketch.simhash import sign_simhash

LSH_OPTIONS = [(np_, t) for np_ in (32, 64, 128) for t in (0.2, 0.3, 0.4, 0.5)]
GRID = [round(x, 2) for x in np.arange(0.1, 1.0001, 0.05)]
SIM_GRID = [round(x, 2) for x in np.arange(0.05, 1.0001, 0.05)]


def features(pairs: list[dict[str, Any]], texts: dict[str, str], order: dict[str, int]) -> Any:
    cfg = StreamConfig()
    ids = sorted({str(x) for p in pairs for x in (p["id1"], p["id2"])})
    fp = {i: int(sign_simhash(texts[i], cfg.simhash).values[0]) for i in ids}
    sh = {i: sign_shingles(texts[i], cfg.shingles).values for i in ids}
    bands: dict[tuple[int, float], dict[str, Any]] = {}
    for np_, t in LSH_OPTIONS:
        lsh = LSHIndex(num_perm=np_, threshold=t)
        b, r = lsh.bands, lsh.rows
        mh = {i: minhash_values(sh[i], np_, "permutations", 1) for i in ids}
        bands[(np_, t)] = {i: set(band_keys(mh[i][None, :], b, r)[:, 0].tolist()) for i in ids}
    rows = []
    for p in pairs:
        a, b = str(p["id1"]), str(p["id2"])
        if order[a] > order[b]:
            a, b = b, a
        x, y = sh[a], sh[b]
        inter = int(np.intersect1d(x, y, assume_unique=True).size)
        rows.append(
            {
                "half": int(a.split("~")[0].split("-")[1]) % 2,
                "edit": p["edit"],
                "gold": p["labels"]["editorial"],
                "distance": (fp[a] ^ fp[b]).bit_count(),
                "jaccard": inter / (x.size + y.size - inter),
                "c_new": inter / y.size,
                "c_old": inter / x.size,
                "shared": inter,
                "lsh": {
                    f"{k[0]}/{k[1]}": bool(v[a] & v[b])
                    for k, v in bands.items()  # band keys include the band number
                },
            }
        )
    return rows


def arrays(rows: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    return {
        k: np.array([r[k] for r in rows])
        for k in ("distance", "jaccard", "c_new", "c_old", "shared")
    } | {
        "dup": np.array([r["gold"] == "duplicate" for r in rows]),
        "sim": np.array([r["gold"] == "similar" for r in rows]),
        "diff": np.array([r["gold"] == "different" for r in rows]),
    }


def decide(x: dict[str, np.ndarray], cand: np.ndarray, a: float, b: float, s: float) -> Any:
    # The stream's rule, with its fixed Jaccard route and shared-shingle floor.
    cfg = StreamConfig()
    dup = cand & (
        ((x["c_new"] >= a) & (x["c_old"] >= b) & (x["shared"] >= cfg.duplicate_min_shared))
        | (x["jaccard"] >= cfg.duplicate_min_jaccard)
    )
    sim = cand & ~dup & (np.maximum(x["c_new"], x["c_old"]) >= s)
    return dup, sim


def score(x: dict[str, np.ndarray], dup: np.ndarray, sim: np.ndarray) -> dict[str, Any]:
    return {
        "duplicate": prf(dup, x["dup"]),
        "similar": prf(sim, x["sim"]),
        "different_related": int(np.sum((dup | sim) & x["diff"])),
        "different": int(x["diff"].sum()),
    }


def old_rule(x: dict[str, np.ndarray], cand: np.ndarray, near: np.ndarray) -> Any:
    cont = np.minimum(1.0, np.maximum(x["c_new"], x["c_old"]))
    dup = cand & ((x["jaccard"] >= 0.5) | (cont >= 0.9))
    # The old stream: LSH-only candidates kept only as duplicates; every SimHash candidate
    # that is not a duplicate is similar.
    sim = near & ~dup
    return dup, sim


def by_edit_losses(
    rows: list[dict[str, Any]],
    x: dict[str, np.ndarray],
    cand: np.ndarray,
    a: float,
    b: float,
    s: float,
) -> dict[str, Any]:
    """Per edit: gold duplicates, found, never candidates, rejected by verification; false
    duplicates; gold similar found as similar."""
    dup, sim = decide(x, cand, a, b, s)
    edits = np.array([r["edit"] for r in rows])
    out = {}
    for e in sorted(set(edits)):
        m = edits == e
        g = m & x["dup"]
        out[e] = {
            "gold_duplicate": int(g.sum()),
            "found": int(np.sum(g & dup)),
            "never_candidates": int(np.sum(g & ~cand)),
            "rejected": int(np.sum(g & cand & ~dup)),
            "false_duplicates": int(np.sum(m & ~x["dup"] & dup)),
            "gold_similar": int(np.sum(m & x["sim"])),
            "similar_found": int(np.sum(m & x["sim"] & sim)),
        }
    return out


def main() -> None:
    t0 = time.perf_counter()
    docs = list(read_reuters())
    result = synthesize(docs, SynthConfig())
    order_docs = stream_order(result)
    order = {str(d["id"]): i for i, d in enumerate(order_docs)}
    texts = {str(d["id"]): str(d["text"]) for d in result.docs}
    rows = features(result.pairs, texts, order)
    halves = {h: [r for r in rows if r["half"] == h] for h in (0, 1)}
    xs = {h: arrays(halves[h]) for h in (0, 1)}
    out: dict[str, Any] = {
        "machine": machine(("neardup", "numpy", "numba", "xxhash")),
        "pairs": len(rows),
        "halves": {},
    }
    for h, name in ((0, "tune (even ids)"), (1, "held-out (odd ids)")):
        x = xs[h]
        out["halves"][name] = {
            "pairs": len(halves[h]),
            "duplicate": int(x["dup"].sum()),
            "similar": int(x["sim"].sum()),
            "different": int(x["diff"].sum()),
        }
    # 1. Candidate recall per option, on the tuning half (gold duplicates and similar).
    cand_recall: dict[str, Any] = {}
    x0, r0 = xs[0], halves[0]
    near0 = x0["distance"] <= 7
    cand_recall["simhash d<=7"] = {
        "duplicate": round(float(near0[x0["dup"]].mean()), 4),
        "similar": round(float(near0[x0["sim"]].mean()), 4),
        "different": int(near0[x0["diff"]].sum()),
    }
    for key in (f"{n}/{t}" for n, t in LSH_OPTIONS):
        lsh = np.array([r["lsh"][key] for r in r0])
        c = near0 | lsh
        cand_recall[f"simhash+lsh {key}"] = {
            "duplicate": round(float(c[x0["dup"]].mean()), 4),
            "similar": round(float(c[x0["sim"]].mean()), 4),
            "different": int(c[x0["diff"]].sum()),
            "lsh_alone_duplicate": round(float(lsh[x0["dup"]].mean()), 4),
        }
    out["candidate_recall_tune"] = cand_recall
    # 2. Loss attribution of the old defaults (both halves together: no choice made here).
    xa = arrays(rows)
    near = xa["distance"] <= 7
    dup, _ = old_rule(xa, near, near)
    g = xa["dup"]
    out["old_default_losses"] = {
        "gold_duplicates": int(g.sum()),
        "never_candidates": int(np.sum(g & ~near)),
        "candidates_rejected_by_verification": int(np.sum(g & near & ~dup)),
        "found": int(np.sum(g & dup)),
        "false_duplicates": int(np.sum(~g & dup)),
        "false_duplicates_gold_similar": int(np.sum(xa["sim"] & dup)),
    }
    by_edit: dict[str, Any] = {}
    edits = np.array([r["edit"] for r in rows])
    for e in sorted(set(edits)):
        m = (edits == e) & g
        if m.any():
            by_edit[e] = {
                "gold": int(m.sum()),
                "never_candidates": int(np.sum(m & ~near)),
                "rejected": int(np.sum(m & near & ~dup)),
            }
    out["old_default_losses_by_edit"] = by_edit
    # 3. Choose (a, b) then s on the tuning half, for each candidate option.
    choices: dict[str, Any] = {}
    for key in ["simhash"] + [f"{n}/{t}" for n, t in LSH_OPTIONS]:

        def cand_of(h: int, key: str = key) -> np.ndarray:
            n = xs[h]["distance"] <= 7
            if key == "simhash":
                return n
            return n | np.array([r["lsh"][key] for r in halves[h]])

        c0 = cand_of(0)
        best = max(
            (
                (prf(decide(x0, c0, a, b, 1.1)[0], x0["dup"])["f1"], a, b)
                for a in GRID
                for b in GRID
            ),
        )
        _, a, b = best
        # s: the smallest overlap at which no different-story pair of the tuning half is
        # related (same-story recall as high as possible, unrelated stories kept apart).
        s = min(
            t for t in SIM_GRID if score(x0, *decide(x0, c0, a, b, t))["different_related"] == 0
        )
        c1 = cand_of(1)
        choices[key] = {
            "a_new_in_stored": a,
            "b_stored_in_new": b,
            "s_similar": s,
            "tune": score(x0, *decide(x0, c0, a, b, s)),
            "held_out": score(xs[1], *decide(xs[1], c1, a, b, s)),
            "old_rule_held_out": score(xs[1], *old_rule(xs[1], c1, xs[1]["distance"] <= 7)),
            "held_out_by_edit": by_edit_losses(halves[1], xs[1], c1, a, b, s),
        }
    out["choices"] = choices
    # What ships for the shingle rule (the defaults before the word-overlap rule), scored
    # once on the held-out half.
    cfg = StreamConfig(verify="shingles")
    key = f"{cfg.lsh_num_perm}/{cfg.lsh_threshold}"
    c1 = (xs[1]["distance"] <= 7) | np.array([r["lsh"][key] for r in halves[1]])
    a, b, s = cfg.duplicate_min_containment, cfg.duplicate_min_coverage, cfg.similar_min_overlap
    out["shipped_defaults"] = {
        "candidates": f"simhash d<=7 + lsh {key}",
        "a_new_in_stored": a,
        "b_stored_in_new": b,
        "s_similar": s,
        "held_out": score(xs[1], *decide(xs[1], c1, a, b, s)),
        "held_out_by_edit": by_edit_losses(halves[1], xs[1], c1, a, b, s),
    }
    print("shipped defaults", json.dumps(out["shipped_defaults"]["held_out"]))
    out["seconds"] = round(time.perf_counter() - t0, 1)
    print("wrote", save("stream_rule", out, indent=1))
    print(json.dumps({k: v for k, v in out.items() if k != "choices"}, indent=1))
    for key, c in choices.items():
        print(
            f"{key:14s} a={c['a_new_in_stored']:.2f} b={c['b_stored_in_new']:.2f} "
            f"s={c['s_similar']:.2f} | tune dup {c['tune']['duplicate']} | held-out dup "
            f"{c['held_out']['duplicate']} sim {c['held_out']['similar']} diff-rel "
            f"{c['held_out']['different_related']} | old rule held-out dup "
            f"{c['old_rule_held_out']['duplicate']}"
        )


if __name__ == "__main__":
    main()
