"""Signing throughput per scheme, side by side with datasketch and rensa (one core).

Every contender gets the raw article text and must produce a signature from it:

neardup (``neardup.sign(text, scheme)``)
    text stage (NFKC + case folding, Unicode word tokens, Snowball stemming) -> xxh3 token
    hashes -> word 4-shingles -> the scheme's signature.
datasketch ``MinHash(num_perm=128)``
    tokens -> 4-word shingle strings joined by spaces -> UTF-8 -> ``update_batch``; a new
    ``MinHash`` per document as in datasketch's examples (it draws its 128 permutations each
    time), and a tuned variant that draws them once and passes ``permutations=``.
rensa ``RMinHash(num_perm=128, seed=42)``
    tokens -> 4-word shingle strings -> ``update`` (Rust, per document).

For the two libraries the tokens come either from neardup's own text stage
(``token_forms``: *the same shingles* as neardup's minhash) or, as a user without neardup
would write it, from ``re.findall(r"\\w+", text.lower())`` (no stemming: less work).  Both are
reported; the ratio "same shingles" is the like-for-like one.

Run:  /work/venv/bin/python benchmarks/bench_sign.py [--docs 4000] [--rounds 3]
Writes benchmarks/results/sign.json.  Bounded: about a minute.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable

import datasketch
import numpy as np
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


def datasketch_sign(tokens: Callable[[str], list[str]]) -> Callable[[str], object]:
    def run(text: str) -> object:
        m = datasketch.MinHash(num_perm=NUM_PERM, seed=1)
        m.update_batch([s.encode("utf-8") for s in shingle_strings(tokens(text))])
        return m.hashvalues

    return run


def datasketch_reused_sign(tokens: Callable[[str], list[str]]) -> Callable[[str], object]:
    """datasketch with its permutations drawn once and passed in (the tuned way to use it)."""
    first = datasketch.MinHash(num_perm=NUM_PERM, seed=1)
    perms, scheme = first.permutations, first.scheme

    def run(text: str) -> object:
        m = datasketch.MinHash(num_perm=NUM_PERM, seed=1, permutations=perms, scheme=scheme)
        m.update_batch([s.encode("utf-8") for s in shingle_strings(tokens(text))])
        return m.hashvalues

    return run


def rensa_sign(tokens: Callable[[str], list[str]]) -> Callable[[str], object]:
    def run(text: str) -> object:
        m = rensa.RMinHash(num_perm=NUM_PERM, seed=42)
        m.update(shingle_strings(tokens(text)))
        return m.digest()

    return run


def measure_all(
    contenders: dict[str, Callable[[str], object]], texts: list[str], rounds: int
) -> dict[str, float]:
    """Best wall time per contender for one pass over ``texts``.

    The machine is shared, so contenders are interleaved: each round times every contender
    on every chunk of 250 documents in turn, and a contender's time for a chunk is its best
    over the rounds.  Load that drifts during the run then hits all contenders alike.
    """
    for fn in contenders.values():
        for t in texts[:200]:
            fn(t)  # warm-up: compiled kernels, caches, permutations
    chunks = [texts[i : i + 250] for i in range(0, len(texts), 250)]
    best = {name: [float("inf")] * len(chunks) for name in contenders}
    for _ in range(rounds):
        for c, chunk in enumerate(chunks):
            for name, fn in contenders.items():
                t0 = time.perf_counter()
                for t in chunk:
                    fn(t)
                best[name][c] = min(best[name][c], time.perf_counter() - t0)
    return {name: sum(times) for name, times in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    texts: list[str] = []
    for row in read_reuters():
        text = row["text"]
        if text.strip():
            texts.append(text)
        if len(texts) >= args.docs:
            break
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    idf = build_idf_table(texts)
    contenders: dict[str, Callable[[str], object]] = {
        "neardup sentences": lambda t: sign(t, "sentences"),
        "neardup shingles (width 4)": lambda t: sign(t, "shingles"),
        "neardup spotsigs": lambda t: sign(t, "spotsigs"),
        "neardup minhash oph 128": lambda t: sign(t, "minhash", config=MH_OPH),
        "neardup minhash permutations 128": lambda t: sign(t, "minhash", config=MH_PERM),
        "neardup simhash 64 (tf)": lambda t: sign(t, "simhash"),
        "neardup simhash 64 (tf-idf)": lambda t: sign(t, "simhash", config=SH_IDF),
        "neardup simhash 128 (tf-idf)": lambda t: sign(t, "simhash", config=SH_IDF128),
        "datasketch MinHash 128 (same shingles)": datasketch_sign(neardup_tokens),
        "datasketch MinHash 128 (simple regex tokens)": datasketch_sign(simple_tokens),
        "datasketch MinHash 128 (same shingles, permutations reused)": datasketch_reused_sign(
            neardup_tokens
        ),
        "rensa RMinHash 128 (same shingles)": rensa_sign(neardup_tokens),
        "rensa RMinHash 128 (simple regex tokens)": rensa_sign(simple_tokens),
    }
    global MH_OPH, MH_PERM, SH_IDF, SH_IDF128
    MH_OPH = MinHashConfig(num_perm=NUM_PERM, method="oph", width=WIDTH)
    MH_PERM = MinHashConfig(num_perm=NUM_PERM, method="permutations", width=WIDTH)
    SH_IDF = SimHashConfig(idf=idf)
    SH_IDF128 = SimHashConfig(idf=idf, bits=128)
    rows: dict[str, dict[str, float]] = {}
    print(f"{len(texts)} Reuters docs, {megabytes:.2f} MB, one core")
    timings = measure_all(contenders, texts, args.rounds)
    for name, seconds in timings.items():
        rows[name] = {
            "seconds": seconds,
            "docs_per_s": len(texts) / seconds,
            "mb_per_s": megabytes / seconds,
            "us_per_doc": seconds / len(texts) * 1e6,
        }
        print(
            f"{name:48s} {rows[name]['docs_per_s']:9.0f} docs/s "
            f"{rows[name]['mb_per_s']:6.2f} MB/s {rows[name]['us_per_doc']:7.1f} us/doc"
        )
    default = "neardup minhash permutations 128"
    ratios = {}
    for method in ("oph", "permutations"):
        ours = rows[f"neardup minhash {method} 128"]["docs_per_s"]
        for other in (
            "datasketch MinHash 128 (same shingles)",
            "datasketch MinHash 128 (simple regex tokens)",
            "datasketch MinHash 128 (same shingles, permutations reused)",
            "rensa RMinHash 128 (same shingles)",
            "rensa RMinHash 128 (simple regex tokens)",
        ):
            ratios[f"minhash {method} / {other}"] = ours / rows[other]["docs_per_s"]
    for key, value in ratios.items():
        print(f"ratio {key:75s} {value:6.2f}x")
    out = {
        "machine": {
            **machine(("neardup", "numpy", "xxhash", "PyStemmer", "datasketch", "rensa")),
            "note": "shared 2-core machine, other jobs running: figures are noisy; "
            "ratios in one run",
        },
        "docs": len(texts),
        "megabytes": megabytes,
        "default_minhash": default,
        "results": rows,
        "ratios": ratios,
        "numpy": np.__version__,
    }
    print(f"wrote {save('sign', out)}")


MH_OPH: MinHashConfig
MH_PERM: MinHashConfig
SH_IDF: SimHashConfig
SH_IDF128: SimHashConfig

if __name__ == "__main__":
    main()
