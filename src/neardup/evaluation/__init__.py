"""Evaluation: what ``neardup eval`` and ``neardup synth`` run.

* :mod:`~neardup.evaluation.metrics`: precision / recall / F1, PR and ROC curves, AUC, ARI,
  B-cubed, and origin detection's DO / TF / ssr (seed 004);
* :mod:`~neardup.evaluation.alignment`: passage alignment against labelled copied spans
  (character-level and PAN measures);
* :mod:`~neardup.evaluation.pairs`, :mod:`~neardup.evaluation.methods`: labelled pairs and
  clusterings read from JSON Lines, every method scored on them;
* :mod:`~neardup.evaluation.stream`: the news stream's verdicts against labels and the rule;
* :mod:`~neardup.evaluation.synth`: labelled copies with known edits, from any corpus;
* :mod:`~neardup.evaluation.plots`: PNG plots of the above.

The experiments that regenerate docs/evaluation.md and docs/origin/ from ``../shared/data``
are not part of the package: they are the scripts of ``research/``.  Top layer (with ``cli``
and ``service``): it may import any lower layer, nothing imports it.
"""
