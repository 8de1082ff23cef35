"""The curated public API: the pinned list, every listed name resolves, removed names warn
with their new path for one release, and ``import neardup`` stays light."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

import neardup

# One entry point per job, the records they return, their configurations, the error root and
# the three errors callers catch most.  Changing this list is an API change: deprecate first.
PUBLIC = [
    "AlignedPassage",
    "AlignmentConfig",
    "Article",
    "ConfigError",
    "Decision",
    "DedupConfig",
    "Event",
    "EventConfig",
    "EventReport",
    "InputError",
    "Match",
    "NearDupError",
    "NewsIndex",
    "NotFoundError",
    "OriginConfig",
    "OriginDetector",
    "OriginReport",
    "RuleConfig",
    "Signature",
    "StreamConfig",
    "Verdict",
    "__version__",
    "align_passages",
    "dedup",
    "dedup_result_set",
    "judge",
    "sign",
]


def test_the_public_list_is_pinned_and_small() -> None:
    assert neardup.__all__ == PUBLIC
    assert len(PUBLIC) <= 30


@pytest.mark.parametrize("name", neardup.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(neardup, name) is not None


def test_all_is_sorted_and_unknown_names_raise() -> None:
    assert neardup.__all__ == sorted(neardup.__all__)
    assert set(neardup.__all__) == {*neardup._EXPORTS, "__version__"}
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = neardup.nope  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(neardup._MOVED))
def test_removed_names_warn_with_their_new_path(name: str) -> None:
    module = neardup._MOVED[name]
    with pytest.warns(DeprecationWarning, match=rf"use `from {module} import {name}`"):
        value = getattr(neardup, name)
    assert value is getattr(importlib.import_module(module), name)
    assert name not in neardup.__all__ and name not in dir(neardup)


def test_from_import_of_a_removed_name_warns_at_the_caller() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from neardup import jaccard  # noqa: F401
    (warning,) = caught
    assert warning.category is DeprecationWarning and warning.filename == __file__


def test_errors_reachable_as_a_submodule() -> None:
    code = "import neardup; print(neardup.errors.StoreError.__mro__[1].__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "NearDupError"


def test_import_is_light() -> None:
    """Importing the package must not pull in numba, the store or Dask."""
    code = (
        "import sys, neardup; "
        "mods = ('numba', 'dask', 'fastapi', 'sqlite3', 'psycopg'); "
        "heavy = [m for m in mods if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_sign_and_dedup_at_top_level() -> None:
    texts = [
        "Stocks rose sharply on Monday. Traders cited strong earnings. Oil prices fell.",
        "Stocks rose sharply on Monday. Traders cited strong earnings. Oil prices fell.",
        "The central bank kept its rates unchanged. Analysts had expected a cut.",
    ]
    signatures = [neardup.sign(t) for t in texts]
    assert signatures[0].scheme == "coverage"  # the default scheme: the rule's sketch
    assert neardup.dedup_result_set(signatures) == [0, 0, 2]
    sentences = [neardup.sign(t, "sentences") for t in texts]
    assert neardup.dedup_result_set(sentences, 0.5) == [0, 0, 2]
