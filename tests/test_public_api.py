"""The curated public API: every listed name resolves, and ``import neardup`` stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import neardup


@pytest.mark.parametrize("name", neardup.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(neardup, name) is not None


def test_all_is_sorted_and_unknown_names_raise() -> None:
    assert neardup.__all__ == sorted(neardup.__all__)
    assert set(neardup.__all__) == {*neardup._EXPORTS, "__version__"}
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = neardup.nope  # type: ignore[attr-defined]


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
