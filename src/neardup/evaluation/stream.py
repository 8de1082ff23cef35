"""How the news stream's decisions compare with labelled pairs, and with the rule itself.

:func:`evaluate_stream` ingests documents into a temporary store in date order (undated
last, ties by id), as an aggregator would see them, then reads for each labelled pair the
stream's verdict: the match of the later article with the earlier one in its decision, else
in the later article's ``similar()`` list, else ``duplicate`` when the two are in one
duplicate group (which ``similar()`` leaves out), else ``unrelated``.  It reports, per verdict
(``duplicate``, ``partial``, ``similar``), precision / recall / F1 against the labels, the
same for the rule applied to the pair directly (:func:`neardup.rule.judge`), how often the
two agree (the stream reaches only its candidates), duplicate precision / recall / F1
read as "in the same duplicate group", and the stream's verdict of each pair (``verdicts``).

Labels are normalised: ``related`` counts as ``similar``, ``different`` as ``unrelated``.
Deterministic; memory: one decision per document.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from neardup.errors import InputError

__all__ = ["VERDICT_OF_LABEL", "evaluate_stream"]

VERDICT_OF_LABEL = {
    "duplicate": "duplicate",
    "partial": "partial",
    "similar": "similar",
    "related": "similar",
    "unrelated": "unrelated",
    "different": "unrelated",
}


def _prf(tp: int, fp: int, fn: int) -> dict[str, float | int | None]:
    p = tp / (tp + fp) if tp + fp else None
    r = tp / (tp + fn) if tp + fn else None
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None
    return {"precision": p, "recall": r, "f1": f1, "tp": tp, "fp": fp, "fn": fn}


def _scores(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for cls in ("duplicate", "partial", "similar"):
        tp = sum(g == cls and p == cls for g, p in zip(gold, predicted, strict=True))
        fp = sum(g != cls and p == cls for g, p in zip(gold, predicted, strict=True))
        fn = sum(g == cls and p != cls for g, p in zip(gold, predicted, strict=True))
        out[cls] = _prf(tp, fp, fn)
    return out


def evaluate_stream(
    docs: Sequence[Mapping[str, Any]],
    pairs: Sequence[tuple[str, str]],
    labels: Sequence[str],
    config: Any = None,
) -> dict[str, Any]:
    """The comparison described in the module docstring (``config``: a ``StreamConfig``,
    default with breaking events off).  ``InputError`` for an unknown label or an id of a
    pair that is not among ``docs``."""
    from neardup.api import NewsIndex
    from neardup.detect.story import EventConfig, StoryConfig
    from neardup.detect.stream import Decision, StreamConfig
    from neardup.records import Article
    from neardup.rule import judge

    gold = []
    for label in labels:
        if label not in VERDICT_OF_LABEL:
            raise InputError(f"unknown label {label!r}: use one of {sorted(VERDICT_OF_LABEL)}")
        gold.append(VERDICT_OF_LABEL[label])
    cfg = config or StreamConfig(stories=StoryConfig(events=EventConfig(enabled=False)))
    articles = [Article.from_mapping(d) for d in docs]
    articles.sort(key=lambda a: (a.date is None, a.date.timestamp() if a.date else 0.0, a.id))
    order = {a.id: n for n, a in enumerate(articles)}
    texts = {a.id: a.text for a in articles}
    for a, b in pairs:
        for x in (a, b):
            if x not in order:
                raise InputError(f"labelled id {x!r} is not among the documents")
    stream_v, rule_v, same = [], [], []
    with (
        tempfile.TemporaryDirectory(prefix="neardup-eval-") as tmp,
        NewsIndex(str(Path(tmp) / "eval.db"), cfg) as news,
    ):
        results = news.ingest_many(articles)
        decisions = {a.id: r for a, r in zip(articles, results, strict=True)}
        for x, y in pairs:
            first, later = sorted((x, y), key=order.__getitem__)
            rule_v.append(judge(texts[first], texts[later], cfg.rule).label)
            decision = decisions[later]
            if not isinstance(decision, Decision) or not isinstance(decisions[first], Decision):
                stream_v.append("unrelated")  # not stored (e.g. no words)
                same.append(False)
                continue
            verdicts = {m.id: m.verdict for m in decision.matches}
            if first not in verdicts:
                verdicts = {m.id: m.verdict for m in news.similar(later, 100_000)}
            grouped = news.original_of(first) == news.original_of(later)
            # One duplicate group: the stream says duplicate (similar() leaves the group out).
            stream_v.append(verdicts.get(first, "duplicate" if grouped else "unrelated"))
            same.append(grouped)
    agree = sum(s == r for s, r in zip(stream_v, rule_v, strict=True))
    group = ["duplicate" if g else "unrelated" for g in same]
    return {
        "pairs": len(pairs),
        "stream": _scores(gold, stream_v),
        "rule": _scores(gold, rule_v),
        "same_group": _scores(gold, group)["duplicate"],
        "agreement_with_rule": agree / len(pairs) if pairs else None,
        "verdicts": stream_v,
        "disagreements": dict(
            Counter(
                f"rule {r} / stream {s}" for s, r in zip(stream_v, rule_v, strict=True) if s != r
            )
        ),
    }
