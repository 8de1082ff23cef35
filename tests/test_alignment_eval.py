"""Passage alignment evaluation (neardup.evaluation.alignment): both aligners and the PAN
measures end to end on labelled spans, the label reader's errors, and the ``neardup eval
alignment`` command.

Oracle: a 3-sentence Reuters passage planted at a known offset in another Reuters article
(the scores must be exactly 1) beside a pair with nothing copied.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from neardup.cli import main
from neardup.errors import ConfigError, InputError, NotFoundError
from neardup.evaluation.alignment import (
    LabelledSpans,
    evaluate_alignment,
    read_alignment_labels,
)
from neardup.evaluation.pairs import read_texts
from neardup.similarity import AlignmentConfig, align_passages
from neardup.text import sentence_spans


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture()
def planted(tmp_path: Path, reuters_docs: list[dict[str, Any]]) -> tuple[Path, Path, int]:
    """Labels and documents: one verbatim pair (a 3-sentence Reuters passage planted in another
    Reuters article) and one no-plagiarism pair; returns both files and the passage length."""
    texts = [d["text"] for d in reuters_docs if d["text"] and len(sentence_spans(d["text"])) >= 8]
    source = host = other = ""
    for i, a in enumerate(texts):
        rest = [b for b in texts[i + 1 : i + 40] if not align_passages(a, b)]
        if len(rest) >= 2:
            source, host, other = a, rest[0], rest[1]
            break
    assert source, "no unrelated Reuters articles found"
    spans = sentence_spans(source)
    a, b = spans[1][0], spans[3][1]
    cut = sentence_spans(host)[2][1]
    susp = host[:cut] + " " + source[a:b] + " " + host[cut:]
    docs = _write(tmp_path / "docs.jsonl", [
        {"id": "src1", "text": source}, {"id": "susp1", "text": susp},
        {"id": "susp2", "text": other},
    ])  # fmt: skip
    feature = {"name": "plagiarism", "obfuscation": "none", "this_offset": cut + 1,
               "this_length": b - a, "source_offset": a, "source_length": b - a}  # fmt: skip
    labels = _write(tmp_path / "labels.jsonl", [
        {"susp": "susp1", "src": "src1", "category": "02-no-obfuscation",
         "features": [{"name": "about", "title": "news"}, feature]},
        {"susp": "susp2", "src": "src1", "category": "01-no-plagiarism", "features": []},
    ])  # fmt: skip
    return labels, docs, b - a


def _read(labels: Path, docs: Path) -> tuple[list[LabelledSpans], dict[str, str]]:
    return read_alignment_labels(labels), read_texts(docs)


def test_passages_method_exact_on_planted_copy(planted: tuple[Path, Path, int]) -> None:
    labels, docs, length = planted
    pairs, texts = _read(labels, docs)
    assert [p.group for p in pairs] == ["02-no-obfuscation", "01-no-plagiarism"]
    assert len(pairs[0].spans) == 1 and pairs[1].spans == ()  # metadata marks nothing
    scores = evaluate_alignment(pairs, texts, method="passages")
    exact = scores["02-no-obfuscation"]
    assert (exact.true_chars, exact.predicted_chars, exact.matched_chars) == (length,) * 3
    assert (exact.pan_precision, exact.pan_recall, exact.granularity, exact.plagdet) == (
        1.0,
        1.0,
        1.0,
        1.0,
    )
    assert (exact.cases, exact.detections) == (1, 1) and exact.ms_per_pair is not None
    none = scores["01-no-plagiarism"]
    assert none.predicted_chars == 0 and none.detections == 0
    # the origin aligner on the same pairs: its segments run from the first to the last
    # copied token (the final full stop is not a token); no source spans, no PAN measures
    origin = evaluate_alignment(pairs, texts, method="origin")["02-no-obfuscation"]
    assert origin.precision == 1.0 and origin.matched_chars >= length - 2
    assert origin.plagdet is None


def test_bad_arguments_and_labels(planted: tuple[Path, Path, int], tmp_path: Path) -> None:
    labels, docs, _ = planted
    pairs, texts = _read(labels, docs)
    with pytest.raises(ConfigError):
        evaluate_alignment(pairs, texts, method="nope")
    with pytest.raises(ConfigError):
        evaluate_alignment(pairs, texts, method="origin", config=AlignmentConfig())
    with pytest.raises(NotFoundError, match="no document"):
        evaluate_alignment(pairs, {"src1": texts["src1"]})
    beyond = [LabelledSpans("susp2", "src1", "x", ((0, 10**6, 0, 0),))]
    with pytest.raises(InputError, match="ends after its text"):
        evaluate_alignment(beyond, texts)
    for bad in ({"susp": "a"}, {"susp": "a", "src": "b", "features": "x"},
                {"susp": "a", "src": "b", "features": [{"this_offset": "one"}]},
                {"susp": "a", "src": "b", "features": [{"this_offset": -1}]}):  # fmt: skip
        path = _write(tmp_path / "bad.jsonl", [{"susp": "s", "src": "t"}, bad])
        with pytest.raises(InputError, match=r"bad\.jsonl:2"):
            read_alignment_labels(path)
    ungrouped = read_alignment_labels(_write(tmp_path / "u.jsonl", [{"s": "a", "t": "b"}]),
                                      id_fields=("s", "t"))  # fmt: skip
    assert ungrouped == [LabelledSpans("a", "b", "all", ())]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_alignment_equals_the_module(
    planted: tuple[Path, Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    labels, docs, _ = planted
    pairs, texts = _read(labels, docs)
    for method in ("passages", "origin"):
        code, out, _ = _run(
            capsys, "eval", "alignment", str(labels), "--docs", str(docs), "--method", method,
            "--json",
        )  # fmt: skip
        assert code == 0
        got = json.loads(out)
        assert got["method"] == method
        direct = evaluate_alignment(pairs, texts, method=method)
        drop = ("ms_per_pair",)
        assert {
            c: {k: v for k, v in s.items() if k not in drop} for c, s in got["groups"].items()
        } == {c: {k: v for k, v in s.to_dict().items() if k not in drop} for c, s in direct.items()}
    code, out, _ = _run(capsys, "eval", "alignment", str(labels), "--docs", str(docs))
    assert code == 0 and "02-no-obfuscation" in out and "plagdet" in out
    assert "01-no-plagiarism" in out and "nothing to find: 0 characters" in out


def test_cli_alignment_errors(
    planted: tuple[Path, Path, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels, docs, _ = planted
    code, _, err = _run(
        capsys, "eval", "alignment", str(tmp_path / "none.jsonl"), "--docs", str(docs)
    )
    assert code == 66 and "Traceback" not in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(labels.read_text() + "not json\n")
    code, _, err = _run(capsys, "eval", "alignment", str(bad), "--docs", str(docs))
    assert code == 65 and "bad.jsonl:3" in err
    few = _write(tmp_path / "few.jsonl", [{"id": "src1", "text": "a text"}])
    code, _, err = _run(capsys, "eval", "alignment", str(labels), "--docs", str(few))
    assert code == 66 and "no document" in err
    code, _, err = _run(
        capsys, "eval", "alignment", str(labels), "--docs", str(docs), "--id-fields", "susp"
    )
    assert code == 2 and "--id-fields" in err
