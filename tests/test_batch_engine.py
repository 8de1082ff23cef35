"""Batch dedup engine: brute-force oracle on real Reuters with planted copies, identical
output on 1 process and Dask 1/2 workers, keep policies, --against, restart, pairs."""

from __future__ import annotations

import collections
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from neardup.batch import DedupConfig, dedup, find_pairs, run
from neardup.batch import engine as engine_module
from neardup.batch.io import check_complete
from neardup.errors import ConfigError
from neardup.evaluation.synth import perturb_words
from neardup.sketch import sign
from neardup.sketch.shingleset import shingle_hashes

THRESHOLD = 0.5


def _write(path: Path, docs: list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps(d) + "\n")
    return path


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, reuters_docs: list[dict[str, Any]]):
    """1,200 real Reuters docs + 150 perturbed copies (0-12% of words edited)."""
    rng = random.Random(5)
    base = [
        {"id": d["id"], "text": d["text"], "title": d["title"], "date": d["date"]}
        for d in reuters_docs[:1200]
    ]
    sources = [d for d in base if len(d["text"]) > 400]
    copies = []
    for k in range(150):
        src = rng.choice(sources)
        copies.append(
            {
                "id": f"copy{k}-{src['id']}",
                "text": perturb_words(
                    src["text"], rng.uniform(0.0, 0.12), rng, insertion="duplicate"
                ),
                "title": src["title"],
                "date": "1988-01-01T00:00:00Z",
            }
        )
    docs = base + copies
    rng.shuffle(docs)
    folder = tmp_path_factory.mktemp("planted")
    return _write(folder / "docs.jsonl", docs), docs


def _oracle_jaccard(docs: list[dict[str, Any]], width: int) -> Any:
    """All-pairs exact Jaccard (sparse matrix product), as a dense matrix."""
    sparse = pytest.importorskip("scipy.sparse")
    cfg = DedupConfig(width=width).shingles
    sets = [shingle_hashes(d["text"], cfg) for d in docs]
    vocab = {v: i for i, v in enumerate(np.unique(np.concatenate(sets)).tolist())}
    rows = np.repeat(np.arange(len(sets)), [s.shape[0] for s in sets])
    cols = np.array([vocab[v] for s in sets for v in s.tolist()], dtype=np.int64)
    m = sparse.csr_matrix((np.ones(cols.shape[0]), (rows, cols)), shape=(len(sets), len(vocab)))
    inter = (m @ m.T).toarray()
    sizes = np.array([s.shape[0] for s in sets], dtype=np.float64)
    union = sizes[:, None] + sizes[None, :] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        jac = np.where(union > 0, inter / union, 0.0)
    empty = sizes == 0
    jac[empty, :] = 0.0
    jac[:, empty] = 0.0
    return jac


@pytest.fixture(scope="module")
def local_result(planted):
    path, _ = planted
    return run(path, DedupConfig(threshold=THRESHOLD, partition_size=300))


def test_clusters_against_brute_force_oracle(planted, local_result) -> None:
    _, docs = planted
    result = local_result
    jac = _oracle_jaccard(docs, DedupConfig().width)
    n = len(docs)
    iu = np.triu_indices(n, k=1)
    truth = {(int(a), int(b)) for a, b in zip(*iu, strict=True) if jac[a, b] >= THRESHOLD}
    found = {tuple(map(int, p)) for p in result.pairs[result.scores.passed]}
    # Precision: every pair the engine accepted is a true pair, with the exact score.
    assert found <= truth
    for k in np.flatnonzero(result.scores.passed):
        a, b = result.pairs[k]
        assert result.scores.jaccard[k] == pytest.approx(jac[a, b], abs=1e-12)
    # Recall: LSH (32 bands x 4 rows at T=0.5) finds almost every pair with J >= 0.7 and
    # every exact copy.
    strong = {p for p in truth if jac[p] >= 0.7}
    assert len(strong & found) >= 0.98 * len(strong)
    assert {p for p in truth if jac[p] >= 0.999} <= found
    # Clusters are the connected components of the accepted pairs, and every planted copy
    # whose source is similar enough lands in its source's cluster.
    index = {d["id"]: i for i, d in enumerate(docs)}
    labels = result.labels
    copies = [d["id"] for d in docs if d["id"].startswith("copy")]
    planted_pairs = [(index[c.split("-", 1)[1]], index[c]) for c in copies]
    strong_planted = [(a, b) for a, b in planted_pairs if jac[a, b] >= 0.7]
    together = sum(labels[a] == labels[b] for a, b in strong_planted)
    assert together >= 0.98 * len(strong_planted)
    # The kept document of a cluster with a planted copy is the earliest: never a 1988 copy
    # when the original is there.
    for a, b in strong_planted:
        if labels[a] == labels[b]:
            assert not docs[int(result.kept_of[b])]["id"].startswith("copy")


def test_identical_output_single_process_and_dask(planted, local_result) -> None:
    distributed = pytest.importorskip("distributed")
    path, _ = planted
    expected = list(local_result.rows())
    for workers in (1, 2):
        with (
            distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=False, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            result = run(path, DedupConfig(threshold=THRESHOLD, partition_size=300), client=client)
        assert list(result.rows()) == expected
        assert np.array_equal(result.pairs, local_result.pairs)
        assert np.array_equal(result.scores.jaccard, local_result.scores.jaccard, equal_nan=True)


def test_partition_size_does_not_change_output(planted, local_result) -> None:
    path, _ = planted
    other = run(path, DedupConfig(threshold=THRESHOLD, partition_size=1000))
    assert list(other.rows()) == list(local_result.rows())


def _small_corpus(tmp_path: Path) -> tuple[Path, str]:
    story = (
        "The central bank raised its key interest rate by half a point on Tuesday, "
        "citing rising inflation and a weaker currency, and said further increases "
        "were possible if price pressures did not ease in the coming months."
    )
    other = (
        "Crude oil prices fell sharply in early trading after producers agreed to lift "
        "output quotas, traders said, with benchmark futures down more than two dollars."
    )
    docs = [
        {"id": "late", "text": story, "date": "1987-03-02T00:00:00Z"},
        {"id": "long", "text": story + " Analysts had expected the move.", "date": None},
        {"id": "early", "text": story, "date": "1987-03-01T00:00:00Z"},
        {"id": "solo", "text": other, "date": "1987-01-01T00:00:00Z"},
        {"id": "blank", "text": "", "date": None},
        {"id": "blank2", "text": "  ", "date": None},
    ]
    return _write(tmp_path / "small.jsonl", docs), story


@pytest.mark.parametrize(
    ("keep", "kept"), [("earliest", "early"), ("first", "late"), ("longest", "long")]
)
def test_keep_policies(tmp_path: Path, keep: str, kept: str) -> None:
    path, _ = _small_corpus(tmp_path)
    result = run(path, DedupConfig(keep=keep, threshold=0.8))
    rows = {r["id"]: r for r in result.rows()}
    for doc in ("late", "long", "early"):
        assert rows[doc]["cluster"] == kept
        assert rows[doc]["duplicate_of"] == (None if doc == kept else kept)
        assert (rows[doc]["score"] is None) == (doc == kept)
    # Empty texts are never grouped, even with each other.
    for doc in ("solo", "blank", "blank2"):
        assert rows[doc] == {"id": doc, "cluster": doc, "duplicate_of": None, "score": None}
    assert result.summary.empty == 2
    assert result.summary.removed == 2
    assert result.summary.clusters == 4


def test_against_removes_only_new_documents(tmp_path: Path) -> None:
    path, story = _small_corpus(tmp_path)
    existing = _write(
        tmp_path / "existing.jsonl",
        [{"id": "archive-1", "text": story, "date": "1990-01-01T00:00:00Z"}],
    )
    result = run(path, DedupConfig(threshold=0.8), against=existing)
    rows = list(result.rows())
    assert [r["id"] for r in rows] == ["late", "long", "early", "solo", "blank", "blank2"]
    by_id = {r["id"]: r for r in rows}
    # The archive copy is later than "early" but existing documents always stay and win.
    for doc in ("late", "long", "early"):
        assert by_id[doc]["duplicate_of"] == "archive-1"
    assert by_id["solo"]["duplicate_of"] is None
    assert result.summary.documents == 6
    assert result.summary.existing_documents == 1
    assert result.summary.removed == 3


@pytest.mark.parametrize(
    ("method", "verify"),
    [
        ("simhash", "jaccard"),
        ("sentences", "jaccard"),
        ("spotsigs", "jaccard"),
        ("minhash", "lcs"),
        ("minhash", "none"),
        ("sentences", "none"),
    ],
)
def test_every_method_and_verifier_finds_exact_copies(
    tmp_path: Path, reuters_docs: list[dict[str, Any]], method: str, verify: str
) -> None:
    docs = [{"id": d["id"], "text": d["text"]} for d in reuters_docs[:300] if d["text"]]
    copies = [{"id": f"copy-{d['id']}", "text": d["text"]} for d in docs[:40:4]]
    path = _write(tmp_path / "c.jsonl", docs + copies)
    result = run(path, DedupConfig(method=method, verify=verify, threshold=0.8))
    rows = {r["id"]: r for r in result.rows()}
    scheme, params = DedupConfig(method=method).sign_params()
    for c in copies:
        original = c["id"].removeprefix("copy-")
        if len(sign(c["text"], scheme, **params)) == 0:
            # No feature (e.g. SpotSigs of an earnings table): defined as never grouped.
            assert rows[c["id"]]["duplicate_of"] is None
            continue
        assert rows[c["id"]]["cluster"] == rows[original]["cluster"]
        assert rows[c["id"]]["duplicate_of"] is not None
    accepted = result.scores.passed
    if verify == "lcs":
        assert np.all(result.scores.lcs[accepted] >= 0.8)
    if verify == "none":
        assert np.all(result.scores.estimated[accepted] >= 0.8)


def test_lcs_score_is_longest_common_token_run(tmp_path: Path) -> None:
    shared = " ".join(f"w{i}" for i in range(30))
    docs = [
        {"id": "a", "text": "alpha beta " + shared + " gamma"},
        {"id": "b", "text": shared + " delta epsilon zeta eta theta"},
    ]
    path = _write(tmp_path / "l.jsonl", docs)
    result = run(path, DedupConfig(verify="lcs", threshold=0.5, bands=32))
    k = int(np.flatnonzero((result.pairs[:, 0] == 0) & (result.pairs[:, 1] == 1))[0])
    assert result.scores.lcs[k] == pytest.approx(30 / 33)  # 30 shared of 33 tokens (a)


def test_pairs_mode_relations(tmp_path: Path, reuters_docs: list[dict[str, Any]]) -> None:
    long_doc = next(d for d in reuters_docs if len(d["text"].split()) > 300)
    words = long_doc["text"].split()
    docs = [
        {"id": "full", "text": long_doc["text"]},
        {"id": "copy", "text": long_doc["text"]},
        {"id": "part", "text": " ".join(words[: len(words) // 2])},
        {"id": "other", "text": next(d["text"] for d in reuters_docs[1:] if d["text"])},
    ]
    path = _write(tmp_path / "p.jsonl", docs)
    out = tmp_path / "pairs.jsonl"
    find_pairs(path, out, DedupConfig(threshold=0.3, bands=64))
    check_complete(out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    relation = {(r["id_a"], r["id_b"]): r["relation"] for r in rows}
    assert relation[("full", "copy")] == "duplicate"
    assert relation[("full", "part")] == "partial"
    assert relation[("copy", "part")] == "partial"
    for r in rows:
        assert {"id_a", "id_b", "estimated", "jaccard", "containment", "lcs"} <= r.keys()
        assert r["jaccard"] >= 0.3 or r["containment"] >= 0.8
        assert "other" not in (r["id_a"], r["id_b"])


def test_dedup_writes_outputs_and_skips_a_finished_run(tmp_path: Path, planted) -> None:
    path, docs = planted
    out = tmp_path / "out.jsonl"
    kept = tmp_path / "kept.jsonl.gz"
    cfg = DedupConfig(threshold=THRESHOLD, partition_size=300)
    summary = dedup(path, out, cfg, write_kept=kept)
    assert check_complete(out)["rows"] == len(docs)
    assert not (tmp_path / "out.jsonl.work").exists()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == [d["id"] for d in docs]
    removed = {r["id"] for r in rows if r["duplicate_of"] is not None}
    assert len(removed) == summary.removed > 0
    import gzip

    with gzip.open(kept, "rt") as fh:
        kept_docs = [json.loads(line) for line in fh]
    assert [d["id"] for d in kept_docs] == [d["id"] for d in docs if d["id"] not in removed]
    assert kept_docs[0] == next(d for d in docs if d["id"] == kept_docs[0]["id"])
    # Same inputs and parameters: the complete output is recognised and not recomputed.
    again = dedup(path, out, cfg, write_kept=kept)
    assert again.removed == summary.removed
    assert again.seconds == summary.seconds  # read back from the marker, not re-run


@pytest.mark.parametrize("worker_reads", [True, False])
def test_interrupted_run_resumes_with_identical_output(
    tmp_path: Path, planted, monkeypatch: pytest.MonkeyPatch, worker_reads: bool
) -> None:
    path, _ = planted
    cfg = DedupConfig(threshold=THRESHOLD, partition_size=300)
    out = tmp_path / "out.jsonl"
    real = engine_module._sign_task
    calls = collections.Counter[str]()

    def failing(*args):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt  # the user pressed Ctrl-C during partition 3
        return real(*args)

    monkeypatch.setattr(engine_module, "_sign_task", failing)
    with pytest.raises(KeyboardInterrupt):
        dedup(path, out, cfg, worker_reads=worker_reads)
    assert not out.exists()
    assert (tmp_path / "out.jsonl.work").exists()
    monkeypatch.setattr(engine_module, "_sign_task", real)
    summary = dedup(path, out, cfg, worker_reads=worker_reads)
    assert summary.resumed_partitions == 3
    fresh = tmp_path / "fresh.jsonl"
    dedup(path, fresh, cfg, worker_reads=worker_reads)
    assert out.read_bytes() == fresh.read_bytes()


def test_bad_config_is_config_error() -> None:
    for bad in (
        {"threshold": 1.5},
        {"threshold": 0.0},
        {"method": "magic"},
        {"verify": "eyes"},
        {"keep": "random"},
        {"num_perm": 1},
        {"bands": 0},
        {"partition_size": 0},
    ):
        with pytest.raises(ConfigError):
            DedupConfig(**bad)  # type: ignore[arg-type]


def test_work_dir_cleanup_touches_only_its_own_files(tmp_path: Path) -> None:
    path, _ = _small_corpus(tmp_path)
    work = tmp_path / "mywork"
    work.mkdir()
    (work / "notes.json").write_text("{}")
    (work / "sig.values-000000.npy.bak").write_text("user file")
    dedup(path, tmp_path / "out.jsonl", DedupConfig(threshold=0.8), work_dir=work)
    assert sorted(p.name for p in work.iterdir()) == ["notes.json", "sig.values-000000.npy.bak"]
