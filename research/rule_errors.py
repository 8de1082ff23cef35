"""The near-duplicate judgement's errors, to read: each labelled pair of the read-labelled real
news where the rule's duplicate or partial verdict differs from the readers', with its
features, and the perturbation benchmark's duplicate errors counted by edit.

Run:  python research/rule_errors.py [--data ../shared/data] [--originals 1000]

Uses the data sets of ``research/rule_quality.py`` (the provenance pair halves ``0`` and ``1``,
``neardup synth`` over Reuters with the ``guide`` labels, whose ``similar`` copies are read as
``partial``) and the default ``RuleConfig``.
Deterministic.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from rule_quality import provenance, synth_reuters

from neardup.rule import judge


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--originals", type=int, default=1000)
    args = ap.parse_args(argv)
    data = Path(args.data)
    for half in ("0", "1"):
        pairs = provenance(data, half)
        print(f"provenance half {half}: {len(pairs)} pairs; the rule against the readers")
        for p in pairs:
            v = judge(p.a, p.b)
            f = v.features
            wrong_dup = (v.label == "duplicate") != (p.gold == "duplicate")
            wrong_partial = (v.label == "partial") != (p.gold == "partial")
            if wrong_dup or wrong_partial:
                print(
                    f"  readers {p.gold:9s} rule {v.label:9s} confidence {p.kind:6s} "
                    f"coverage {f.coverage_a:.2f}/{f.coverage_b:.2f} passage {f.passage} "
                    f"cosine {f.cosine:.2f} characters {len(p.a)}/{len(p.b)}"
                )
    errors: Counter[tuple[str, str, str]] = Counter()
    for p in synth_reuters(data, "guide", args.originals):
        v = judge(p.a, p.b)
        if (v.label == "duplicate") != (p.gold == "duplicate"):
            errors[(p.gold, v.label, p.kind)] += 1
    print("synth Reuters (guide labels): duplicate errors by (label, rule's verdict, edit)")
    for (gold, label, edit), n in errors.most_common():
        print(f"  {n:5d}  labelled {gold:9s} rule {label:9s} edit {edit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
