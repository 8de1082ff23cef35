"""Signing throughput per scheme, side by side with datasketch and rensa, on ASCII and
Unicode text (one core).

neardup (``neardup.sign(text, scheme)``, one call per document) does the whole job from the
raw text: text stage (NFKC + case folding, Unicode word tokens, Snowball stemming) -> xxh3
token hashes -> word 4-shingles -> the scheme's signature; ``neardup batch`` is its
whole-partition signer (``neardup.batch.fastsign``: one tokeniser call and one MinHash pass
for 250 documents), the counterpart of the libraries' batch calls.

Each library at its documented best, 128 permutations, on chunks of 250 documents:

* datasketch ``MinHash.bulk`` (one set of permutations for all the documents of a call: the
  documented way to hash many sets; drawing permutations per ``MinHash`` costs 1.45x more);
* rensa ``RMinHash.digest_matrix_from_token_sets`` (its batch API, Rust).

Their shingles are word 4-shingle strings, made two ways: ``own tokens`` (``\\w+`` of the
lower-cased text, as a user without neardup would write it; the tokenising is timed: less
work than neardup's, no stemming) and ``given shingles`` (neardup's own shingle strings,
made *before* the clock starts: the library is charged nothing for tokenising, the bound
least favourable to neardup).  neardup is always timed from raw text.

Corpora: Reuters (ASCII newswire), the same Reuters documents with the typographic
punctuation of a news site (``_corpora.typographic``: the same words, non-ASCII text), and
the real scraped pages of provenance_news_2018_dev (Unicode everywhere).  On Reuters,
neardup also signs the typographic version of every chunk in the same interleaved loop:
the Unicode/ASCII rate of the same documents in one run.

Contenders alternate chunk by chunk and each chunk's best of ``--rounds`` counts (the shared
machine's drift falls on all of them alike).  Run:  python benchmarks/bench_sign.py [--docs
4000] [--rounds 3]; ``--quick``: 1,500 documents, 2 rounds.  Writes results/sign.json.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasketch
import rensa

from _common import machine, read_reuters, save
from neardup.sketch import build_idf_table, sign
from neardup.sketch.minhash import MinHashConfig
from neardup.sketch.simhash import SimHashConfig
from neardup.text import TextConfig, token_forms

WIDTH = 4
NUM_PERM = 128
_WORD = re.compile(r"\w+")
_TEXT = TextConfig()


def shingle_strings(tokens: list[str]) -> list[str]:
    if len(tokens) <= WIDTH:
        return [" ".join(tokens)] if tokens else []
    return [" ".join(tokens[i : i + WIDTH]) for i in range(len(tokens) - WIDTH + 1)]


def simple_tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def neardup_tokens(text: str) -> list[str]:
    return token_forms(text, _TEXT)


Prepared = Any
Contender = tuple[Callable[[list[str]], Prepared], Callable[[Prepared], object]]


def _texts(chunk: list[str]) -> list[str]:
    return chunk


def datasketch_bulk(tokens: Callable[[str], list[str]] | None) -> Contender:
    """``MinHash.bulk`` of each chunk; ``tokens`` timed, or ``None``: given shingles."""

    def given(chunk: list[str]) -> list[list[bytes]]:
        return [[s.encode("utf-8") for s in shingle_strings(neardup_tokens(t))] for t in chunk]

    def run(prepared: Any) -> object:
        if tokens is not None:
            prepared = [[s.encode("utf-8") for s in shingle_strings(tokens(t))] for t in prepared]
        return datasketch.MinHash.bulk(prepared, num_perm=NUM_PERM, seed=1)

    return (_texts if tokens is not None else given), run


def rensa_batch(tokens: Callable[[str], list[str]] | None) -> Contender:
    """``RMinHash.digest_matrix_from_token_sets`` of each chunk."""

    def given(chunk: list[str]) -> list[list[str]]:
        return [shingle_strings(neardup_tokens(t)) for t in chunk]

    def run(prepared: Any) -> object:
        if tokens is not None:
            prepared = [shingle_strings(tokens(t)) for t in prepared]
        return rensa.RMinHash.digest_matrix_from_token_sets(prepared, num_perm=NUM_PERM, seed=42)

    return (_texts if tokens is not None else given), run


def per_document(fn: Callable[[str], object]) -> Contender:
    def run(chunk: Any) -> object:
        return [fn(t) for t in chunk]

    return _texts, run


def neardup_batch(chunk: list[str]) -> object:
    from neardup.batch.fastsign import minhash_matrix, partition_shingles

    return minhash_matrix(*partition_shingles(chunk, _TEXT, WIDTH), NUM_PERM, 1)


def measure_all(contenders: dict[str, Contender], texts: list[str], rounds: int) -> dict:
    """Best time per contender for one pass over ``texts`` (chunks of 250 documents, each
    chunk's best over the rounds, contenders interleaved chunk by chunk)."""
    chunks = [texts[i : i + 250] for i in range(0, len(texts), 250)]
    prepared = {name: [prep(c) for c in chunks] for name, (prep, _) in contenders.items()}
    for name, (_, run) in contenders.items():
        run(prepared[name][0])  # warm-up: compiled kernels, caches, permutations
    best = {name: [float("inf")] * len(chunks) for name in contenders}
    for _ in range(rounds):
        for c in range(len(chunks)):
            for name, (_, run) in contenders.items():
                t0 = time.perf_counter()
                run(prepared[name][c])
                best[name][c] = min(best[name][c], time.perf_counter() - t0)
    return {name: sum(times) for name, times in best.items()}


def corpora(docs: int) -> dict[str, list[str]]:
    from _corpora import provenance_texts, typographic

    reuters: list[str] = []
    for row in read_reuters():
        if row["text"].strip():
            reuters.append(row["text"])
        if len(reuters) >= docs:
            break
    return {
        "reuters": reuters,
        "reuters-typographic": [typographic(t) for t in reuters],
        "provenance": provenance_texts()[:docs],
    }


def _typographic_chunk(chunk: list[str]) -> list[str]:
    from _corpora import typographic

    return [typographic(t) for t in chunk]


def contenders_for(texts: list[str], corpus: str) -> dict[str, Contender]:
    global MH_OPH, MH_PERM, SH_IDF, SH_IDF128
    idf = build_idf_table(texts)
    MH_OPH = MinHashConfig(num_perm=NUM_PERM, method="oph", width=WIDTH)
    MH_PERM = MinHashConfig(num_perm=NUM_PERM, method="permutations", width=WIDTH)
    SH_IDF = SimHashConfig(idf=idf)
    SH_IDF128 = SimHashConfig(idf=idf, bits=128)
    extra: dict[str, Contender] = {}
    if corpus == "reuters":
        # The same chunks printed typographic, timed in the same interleaved loop: the
        # Unicode/ASCII rate of one run (made untimed, like every contender's input).
        extra["neardup minhash 128, typographic"] = (
            _typographic_chunk,
            per_document(lambda t: sign(t, "minhash", config=MH_PERM))[1],
        )
        extra["neardup batch minhash 128, typographic"] = (_typographic_chunk, neardup_batch)
    return {
        **extra,
        "neardup minhash 128": per_document(lambda t: sign(t, "minhash", config=MH_PERM)),
        "neardup batch minhash 128": (_texts, neardup_batch),
        "neardup minhash oph 128": per_document(lambda t: sign(t, "minhash", config=MH_OPH)),
        "neardup shingles (width 4)": per_document(lambda t: sign(t, "shingles")),
        "neardup simhash 64 (tf)": per_document(lambda t: sign(t, "simhash")),
        "neardup simhash 64 (tf-idf)": per_document(lambda t: sign(t, "simhash", config=SH_IDF)),
        "neardup simhash 128 (tf-idf)": per_document(
            lambda t: sign(t, "simhash", config=SH_IDF128)
        ),
        "neardup spotsigs": per_document(lambda t: sign(t, "spotsigs")),
        "neardup sentences": per_document(lambda t: sign(t, "sentences")),
        "datasketch MinHash.bulk (own tokens)": datasketch_bulk(simple_tokens),
        "datasketch MinHash.bulk (given shingles)": datasketch_bulk(None),
        "rensa digest_matrix (own tokens)": rensa_batch(simple_tokens),
        "rensa digest_matrix (given shingles)": rensa_batch(None),
    }


RATIOS = [
    ("neardup minhash 128", "datasketch MinHash.bulk (own tokens)"),
    ("neardup minhash 128", "datasketch MinHash.bulk (given shingles)"),
    ("neardup minhash 128", "rensa digest_matrix (own tokens)"),
    ("neardup minhash 128", "rensa digest_matrix (given shingles)"),
    ("neardup batch minhash 128", "rensa digest_matrix (own tokens)"),
    ("neardup batch minhash 128", "rensa digest_matrix (given shingles)"),
    ("neardup batch minhash 128", "datasketch MinHash.bulk (own tokens)"),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1,500 documents, 2 rounds")
    parser.add_argument("--out", default="sign", help="results/<out>.json, or a path")
    args = parser.parse_args()
    if args.quick:
        args.docs, args.rounds = 1500, 2
    # Round one warms neardup's per-process memo of token forms (a long-running process has
    # it warm); each chunk's best round counts.
    args.rounds = max(2, args.rounds)
    results: dict[str, Any] = {}
    for corpus, texts in corpora(args.docs).items():
        megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
        nonascii = sum(not t.isascii() for t in texts) / len(texts)
        print(f"{corpus}: {len(texts)} docs, {megabytes:.2f} MB, {nonascii:.0%} non-ASCII")
        timings = measure_all(contenders_for(texts, corpus), texts, args.rounds)
        rows = {}
        for name, seconds in timings.items():
            rows[name] = {
                "docs_per_s": len(texts) / seconds,
                "mb_per_s": megabytes / seconds,
                "us_per_doc": seconds / len(texts) * 1e6,
            }
            print(f"  {name:45s} {rows[name]['docs_per_s']:9.0f} docs/s "
                  f"{rows[name]['mb_per_s']:6.2f} MB/s")  # fmt: skip
        ratios = {f"{a} / {b}": rows[a]["docs_per_s"] / rows[b]["docs_per_s"] for a, b in RATIOS}
        for key, value in ratios.items():
            print(f"  ratio {key:75s} {value:6.2f}x")
        results[corpus] = {
            "docs": len(texts),
            "megabytes": megabytes,
            "non_ascii_share": nonascii,
            "results": rows,
            "ratios": ratios,
        }
    # Documents per second on the same documents, typographic vs ASCII, from the interleaved
    # loop of the Reuters corpus (the typographic text has a few more bytes: same words).
    same = results["reuters"]["results"]
    unicode_rate = {
        kind: same[f"{kind}, typographic"]["docs_per_s"] / same[kind]["docs_per_s"]
        for kind in ("neardup minhash 128", "neardup batch minhash 128")
    }
    print("neardup on typographic / ASCII Reuters, same documents:", unicode_rate)
    out = {
        "machine": {
            **machine(("neardup", "numpy", "xxhash", "PyStemmer", "datasketch", "rensa")),
            "note": "shared 2-core machine: ratios from one run, contenders interleaved",
        },
        "rounds": args.rounds,
        "corpora": results,
        "neardup_unicode_mb_rate_vs_ascii": unicode_rate,
    }
    target = args.out if "/" not in args.out else Path(args.out)
    print(f"wrote {save(target, out)}")


MH_OPH: MinHashConfig
MH_PERM: MinHashConfig
SH_IDF: SimHashConfig
SH_IDF128: SimHashConfig

if __name__ == "__main__":
    main()
