"""The ``overlap`` evaluation method: one score whose 0.5 boundary is the stream's rule."""

from __future__ import annotations

import random
from typing import Any

from neardup.evaluation.methods import available_methods, get_method
from neardup.evaluation.synth import applicable, apply_edit
from neardup.similarity.overlap import overlap, prepare, sequence_containment


def test_overlap_method_is_listed_and_directed(reuters_docs: list[dict[str, Any]]) -> None:
    assert "overlap" in available_methods(include_lcs=False, include_external=False)
    m = get_method("overlap")
    texts = [str(d["text"]) for d in reuters_docs if len(str(d["text"])) > 800][:30]
    rng = random.Random(1)
    checked = 0
    for i, text in enumerate(texts):
        assert m.score(text, text) == 1.0
        donors = texts[i + 1 :] + texts[:i]
        for edit, s in (("typos", 0.3), ("sentence_insert", 0.5), ("truncate", 0.8)):
            if not applicable(edit, text):
                continue
            copy = apply_edit(edit, text, None, s, rng, donors).text
            score = m.score(text, copy)
            o = overlap(text, copy)
            q = sequence_containment(prepare(text), prepare(copy))
            rule = o.coverage >= 0.5 and o.added <= 0.2 and q >= 0.5
            assert 0.0 <= score <= 1.0
            assert (score >= m.default_threshold) == rule, (edit, score, o, q)
            checked += rule
        # Directed: a padded copy is not a duplicate of the original, but the original is
        # mostly inside the padded copy.
        # (Inside the article: short unfamiliar paragraphs at its edges would be packaging.)
        cut = text.index("\n", len(text) // 2)
        padded = text[:cut] + "\n\n" + donors[0] + "\n\n" + donors[1] + "\n\n" + text[cut:]
        assert m.score(text, padded) < 0.5
    assert checked > 0
