"""The near-duplicate judgement, written once (see :mod:`neardup.rule.verdict`).

``profile(text)`` reads a text once; ``judge(a, b)`` gives the verdict ``duplicate |
partial | similar | unrelated`` with a score, the clauses that held or failed and, with
``explain=True``, the shared passages as spans of both texts.
"""

from neardup.rule.features import Features, Passage, pair_features, shared_passages
from neardup.rule.profile import Profile, RuleConfig, profile
from neardup.rule.verdict import VERDICTS, Clause, Verdict, clauses_of, decide, judge, label_of

__all__ = [
    "VERDICTS",
    "Clause",
    "Features",
    "Passage",
    "Profile",
    "RuleConfig",
    "Verdict",
    "clauses_of",
    "decide",
    "judge",
    "label_of",
    "pair_features",
    "profile",
    "shared_passages",
]
