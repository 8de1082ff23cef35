"""The README's Python tour runs as written (with its free variables given real values)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"

_PRELUDE = {
    "text": (
        "Shares of Acme Corp. rose 5% on Monday. The company said profits doubled. "
        "Analysts had expected a smaller gain. Trading volume was heavy."
    ),
    "ranked_texts": [
        "Oil prices fell on Tuesday. Traders cited rising stocks. Demand stayed weak.",
        "Oil prices fell on Tuesday. Traders cited rising stocks. Demand stayed weak.",
        "The central bank kept rates unchanged. Analysts had expected a cut.",
    ],
    "text_a": "Selling a beautiful house in California.",
    "text_b": "Buying a beautiful crip in California.",
    "source_text": (
        "The central bank kept its key interest rate unchanged on Thursday, saying inflation was "
        "still too high. Governor Maria Lopez told reporters that the board would watch wage "
        "growth closely in the coming months. Economists had expected a quarter-point cut after "
        "weak retail sales figures. The currency rose sharply after the decision."
    ),
    "article_text": (
        "Markets were calm in early trade. Governor Maria Lopez told journalists that the board "
        "would closely watch wage growth in coming months. The currency rose sharply after the "
        "decision, and economists had expected a quarter-point cut after weak retail sales "
        "figures. Bond yields edged higher."
    ),
    "published_at": dt.datetime(1987, 2, 26, 15, 1, tzinfo=dt.UTC),
    "since": dt.datetime(1987, 1, 1, tzinfo=dt.UTC),
    "until": dt.datetime(1988, 1, 1, tzinfo=dt.UTC),
}


def _tour() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "README.md has no python block"
    return blocks[0]


def test_readme_tour_runs(tmp_path: Path, monkeypatch: object) -> None:
    import neardup

    monkeypatch.chdir(tmp_path)  # type: ignore[attr-defined]
    namespace = dict(_PRELUDE)
    namespace["a_sig"] = neardup.sign(_PRELUDE["text"], "shingles")  # type: ignore[arg-type]
    namespace["b_sig"] = neardup.sign(_PRELUDE["text"], "shingles")  # type: ignore[arg-type]
    exec(compile(_tour(), str(README), "exec"), namespace)
    assert namespace["keep_of"] == [0, 0, 2]
    assert namespace["decision"].status == "new"
    assert namespace["report"] is not None
    # the reworded middle of the article is found, its new first and last sentences are not
    (copied,) = namespace["copied"]
    assert copied.startswith("Governor Maria Lopez") and copied.endswith("sales figures.")
