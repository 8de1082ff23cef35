"""``neardup align``: passages as JSON lines with exact spans; bad input exits cleanly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from neardup.cli import cli
from neardup.errors import NearDupError
from neardup.text import sentence_spans


def _run(args: list[str], stdin: bytes | None = None) -> tuple[int, list[dict[str, Any]], Any]:
    result = CliRunner().invoke(cli, ["align", *args], input=stdin)
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    code = result.exit_code
    if isinstance(result.exception, NearDupError):
        code = result.exception.exit_code
    return code, rows, result


def test_planted_passage_found_with_exact_spans(
    tmp_path: Path, reuters_docs: list[dict[str, Any]]
) -> None:
    # Oracle: a verbatim run of whole sentences of one real article planted between two others.
    texts = [d["text"] for d in reuters_docs if len(d["text"]) > 1500]
    source, before = texts[0], texts[60]  # far apart: unrelated stories
    spans = sentence_spans(source)
    start, end = spans[3][0], spans[7][1]  # five whole sentences, as the text stage cuts them
    passage = source[start:end]
    # the planted passage starts and ends at sentence boundaries of the article too (a copy of
    # whole sentences keeps its exact span; mid-sentence edges are trimmed to shared words)
    lead = before[: sentence_spans(before)[2][1]]
    article = lead + " " + passage
    (tmp_path / "s.txt").write_text(source, encoding="utf-8")
    (tmp_path / "a.txt").write_text(article, encoding="utf-8")
    code, rows, result = _run([str(tmp_path / "s.txt"), str(tmp_path / "a.txt")])
    assert code == 0, result.output
    assert len(rows) == 1
    row = rows[0]
    assert row["text"] == passage == row["source_text"]
    assert article[row["this_offset"] : row["this_offset"] + row["this_length"]] == passage
    assert row["source_offset"] == start and row["source_length"] == len(passage)
    # stdin for one side gives the same rows; --no-text drops the texts
    code, rows2, _ = _run([str(tmp_path / "s.txt"), "-", "--no-text"], article.encode())
    assert code == 0 and [{**r, "text": passage, "source_text": passage} for r in rows2] == rows


def test_unrelated_and_bad_input(tmp_path: Path, reuters_docs: list[dict[str, Any]]) -> None:
    a, b = [d["text"] for d in reuters_docs if len(d["text"]) > 1500][3:5]
    (tmp_path / "a.txt").write_text(a, encoding="utf-8")
    (tmp_path / "b.txt").write_text(b, encoding="utf-8")
    code, rows, _ = _run([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")])
    assert code == 0 and rows == []
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe garbage")
    code, _, result = _run([str(tmp_path / "a.txt"), str(tmp_path / "bin.txt")])
    assert code == 65 and "not UTF-8" in str(result.exception)
    code, _, result = _run([str(tmp_path / "missing.txt"), str(tmp_path / "b.txt")])
    assert code == 66 and "does not exist" in str(result.exception)
    code, _, result = _run(["-", "-"], b"x")
    assert code == 2 and "only one" in str(result.exception)
    code, _, result = _run(
        [str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--min-passage-chars", "-1"]
    )
    assert code == 2
