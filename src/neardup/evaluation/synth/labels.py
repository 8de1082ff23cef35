"""The exact measurements that label a copy pair (word-bag kept/added, shingle
containment) and the label rules of the package docstring."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from neardup.config import check_choice
from neardup.evaluation.synth.config import _WORD_RE, LABEL_RULES, Copy, SynthConfig
from neardup.evaluation.synth.edits import strip_boilerplate
from neardup.shingles import hash_forms, word_shingles
from neardup.text import tokenize


def _words(text: str) -> Counter[str]:
    return Counter(w.casefold() for w in _WORD_RE.findall(text))


def bag_overlap(original: str, copy: str) -> tuple[float, float]:
    """``(kept, novel)`` of ``copy`` against ``original`` on case-folded ``\\w+`` word bags.

    ``kept`` = |orig ∩ copy| / |orig|, ``novel`` = 1 - |orig ∩ copy| / |copy| (multisets);
    an empty side gives kept 1.0 / novel 0.0 for that side.  Exact and deterministic.
    """
    a, b = _words(original), _words(copy)
    common = sum((a & b).values())
    n_a, n_b = sum(a.values()), sum(b.values())
    kept = common / n_a if n_a else 1.0
    novel = 1.0 - common / n_b if n_b else 0.0
    return kept, novel


def _bounds(cfg: SynthConfig, rule: str | None) -> tuple[float, float]:
    rule = cfg.label_rule if rule is None else rule
    check_choice("label_rule", rule, LABEL_RULES)
    if rule == "guide":
        return cfg.content_min_kept, cfg.guide_max_added
    if rule == "editorial":
        return cfg.content_min_kept, cfg.content_max_added
    return cfg.duplicate_min_kept, cfg.duplicate_max_novel


def label_copy(
    kept: float, novel: float, config: SynthConfig | None = None, rule: str | None = None
) -> str:
    """``"duplicate"`` or ``"similar"`` for a copy pair by ``rule`` (default: the config's).

    Pass the measurements the rule is defined on: ``content_kept``/``content_added`` for
    ``editorial``, ``kept``/``novel`` for ``bag80`` (see :func:`copy_measures`).
    """
    min_kept, max_added = _bounds(config or SynthConfig(), rule)
    return "duplicate" if kept >= min_kept and novel <= max_added else "similar"


def copy_measures(original: str, copy: Copy) -> dict[str, float]:
    """``kept``/``novel`` of the published copy and ``content_kept``/``content_added`` of its
    content (before noise edits), both without the added boilerplate.  Exact."""
    kept, novel = bag_overlap(original, strip_boilerplate(copy.text))
    if copy.content is None:
        content_kept, content_added = kept, novel
    else:
        content_kept, content_added = bag_overlap(original, strip_boilerplate(copy.content))
    return {
        "kept": kept,
        "novel": novel,
        "content_kept": content_kept,
        "content_added": content_added,
    }


def _shingle_set(text: str, width: int) -> npt.NDArray[np.uint64]:
    forms = tokenize(text).forms
    return np.unique(word_shingles(hash_forms(forms, seed=0), width))


def shingle_containment(a: str, b: str, width: int = 5) -> float:
    """Max containment of the word ``width``-shingle sets of ``a`` and ``b`` (either way).

    Exact: |A ∩ B| / min(|A|, |B|) on stemmed tokens (0.0 when either side is empty).
    """
    sa, sb = _shingle_set(a, width), _shingle_set(b, width)
    if sa.size == 0 or sb.size == 0:
        return 0.0
    common = np.intersect1d(sa, sb, assume_unique=True).size
    return common / min(sa.size, sb.size)


def _overlap(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> float:
    if a.size == 0 or b.size == 0:
        return 0.0
    return np.intersect1d(a, b, assume_unique=True).size / min(a.size, b.size)


def label_margin(
    kept: float, novel: float, config: SynthConfig | None = None, rule: str | None = None
) -> float:
    """Signed distance of a copy from ``rule``'s boundary: ``min(kept - min_kept, max_added -
    added)``; >= 0 for duplicates, < 0 for similar copies (same inputs as :func:`label_copy`)."""
    min_kept, max_added = _bounds(config or SynthConfig(), rule)
    return min(kept - min_kept, max_added - novel)


def _rule_inputs(rule: str, m: Mapping[str, float]) -> tuple[float, float]:
    if rule in ("guide", "editorial"):
        return m["content_kept"], m["content_added"]
    return m["kept"], m["novel"]
