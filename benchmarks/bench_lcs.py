"""Longest common substring of two 5,000-character articles (seed 002's final check).

Pairs from Reuters-21578 (articles of at least 5,000 characters, cut to 5,000): an article
and an edited copy (the demo's ``correction`` edit: the near-duplicate case LCS verifies), and
two unrelated articles.  Compared in the same run with ``difflib.SequenceMatcher(None, a, b,
autojunk=False).find_longest_match`` (the standard-library answer; same length checked) and,
on 1,000-character prefixes only, the quadratic dynamic-programming table of seed 002 in
pure Python (too slow at 5,000).  Also the token-level LCS of the two articles' tokens.

Run:  /work/venv/bin/python benchmarks/bench_lcs.py   (well under a minute)
Writes benchmarks/results/lcs.json.
"""

from __future__ import annotations

import difflib
import random
import statistics
from typing import Any

from _common import load_texts, save, timed
from neardup.cli.demo import edit_text
from neardup.similarity import longest_common_substring
from neardup.text import tokenize

SIZE = 5000


def quadratic_dp(a: str, b: str) -> int:
    """Seed 002's table (WikiBooks), kept to two rows."""
    best = 0
    prev = [0] * (len(b) + 1)
    for x in range(1, len(a) + 1):
        cur = [0] * (len(b) + 1)
        ax = a[x - 1]
        for y in range(1, len(b) + 1):
            if ax == b[y - 1]:
                cur[y] = prev[y - 1] + 1
                if cur[y] > best:
                    best = cur[y]
        prev = cur
    return best


def main() -> None:
    long_texts = [t for t in load_texts(min_chars=SIZE)]
    rng = random.Random(5)
    a = long_texts[0][:SIZE]
    copy = edit_text(long_texts[0], "correction", rng)[:SIZE]
    other = long_texts[1][:SIZE]
    results: dict[str, Any] = {"articles_with_5000_chars": len(long_texts)}
    for name, (x, y) in {"near_duplicate": (a, copy), "unrelated": (a, other)}.items():
        ours = longest_common_substring(x, y)
        matcher = difflib.SequenceMatcher(None, x, y, autojunk=False)
        ref = matcher.find_longest_match(0, len(x), 0, len(y))
        if ref.size != ours.length:
            raise SystemExit(f"{name}: difflib finds {ref.size}, neardup {ours.length}")
        fast = timed(lambda x=x, y=y: longest_common_substring(x, y), 200)
        slow = timed(lambda m=matcher, x=x, y=y: m.find_longest_match(0, len(x), 0, len(y)), 5)
        tx, ty = tokenize(x).forms, tokenize(y).forms
        tokens = timed(lambda tx=tx, ty=ty: longest_common_substring(tx, ty), 200)
        dp_x, dp_y = x[:1000], y[:1000]
        dp = timed(lambda x=dp_x, y=dp_y: quadratic_dp(x, y), 1)
        fast_1000 = timed(lambda x=dp_x, y=dp_y: longest_common_substring(x, y), 200)
        results[name] = {
            "lcs_length": ours.length,
            "ratio_a": round(ours.ratio_a, 4),
            "neardup_median_us": round(statistics.median(fast), 1),
            "neardup_p99_us": round(sorted(fast)[int(0.99 * len(fast)) - 1], 1),
            "difflib_median_us": round(statistics.median(slow), 1),
            "speedup_vs_difflib": round(statistics.median(slow) / statistics.median(fast), 1),
            "token_level_median_us": round(statistics.median(tokens), 1),
            "tokens": [len(tx), len(ty)],
            "at_1000_chars": {
                "neardup_median_us": round(statistics.median(fast_1000), 1),
                "quadratic_dp_us": round(dp[0], 1),
                "speedup_vs_dp": round(dp[0] / statistics.median(fast_1000), 1),
            },
        }
        print(name, results[name])
    print("wrote", save("lcs", results, libraries=("neardup", "numpy", "numba", "pydivsufsort")))


if __name__ == "__main__":
    main()
