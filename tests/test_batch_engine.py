"""Batch dedup engine against brute force on real Reuters with planted copies, excerpts and
truncated reprints: every verdict is the rule's (``judge``), ``pairs`` lists exactly the
related candidates, ``dedup`` clusters are the connected components of the duplicate
verdicts, candidates reach every pair sharing a passage; identical output on 1 process and
Dask 1/2 workers; keep policies, --against, restart."""

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
from neardup.batch import signing as signing_module
from neardup.batch.io import check_complete
from neardup.batch.verify import PairVerdicts
from neardup.errors import ConfigError
from neardup.evaluation.synth import perturb_words
from neardup.rule import Profile, RuleConfig, judge, profile
from neardup.shingles import token_hashes
from neardup.sketch.shingleset import TOKEN_SEED


def _write(path: Path, docs: list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps(d) + "\n")
    return path


def _planted_docs(reuters_docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """450 real Reuters documents, 60 edited copies (0-12 % of words), 25 truncated reprints
    (the first 40-70 % of the words) and 25 excerpts (35-60 words of one article inside
    another)."""
    rng = random.Random(5)
    base = [
        {"id": d["id"], "text": d["text"], "date": d["date"]}
        for d in reuters_docs[:450]
        if d["text"]
    ]
    sources = [d for d in base if len(d["text"].split()) > 120]
    docs = list(base)
    for k in range(60):
        src = rng.choice(sources)
        text = perturb_words(src["text"], rng.uniform(0.0, 0.12), rng, insertion="duplicate")
        docs.append({"id": f"copy{k}-{src['id']}", "text": text, "date": "1988-01-01T00:00:00Z"})
    for k in range(25):
        src = rng.choice(sources)
        words = src["text"].split()
        cut = " ".join(words[: int(len(words) * rng.uniform(0.4, 0.7))])
        docs.append({"id": f"cut{k}-{src['id']}", "text": cut, "date": "1988-01-02T00:00:00Z"})
    for k in range(25):
        src, host = rng.sample(sources, 2)
        words = src["text"].split()
        size = rng.randint(35, 60)
        at = rng.randrange(0, len(words) - size)
        host_words = host["text"].split()
        middle = len(host_words) // 2
        text = " ".join(host_words[:middle] + words[at : at + size] + host_words[middle:])
        docs.append({"id": f"excerpt{k}-{src['id']}", "text": text, "date": None})
    rng.shuffle(docs)
    return docs


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, reuters_docs: list[dict[str, Any]]):
    docs = _planted_docs(reuters_docs)
    folder = tmp_path_factory.mktemp("planted")
    return _write(folder / "docs.jsonl", docs), docs


@pytest.fixture(scope="module")
def profiles(planted) -> list[Profile]:
    _, docs = planted
    return [profile(d["text"]) for d in docs]


@pytest.fixture(scope="module")
def local_result(planted):
    path, _ = planted
    return run(path, DedupConfig(partition_size=100), mode="pairs")


@pytest.fixture(scope="module")
def all_verdicts(profiles) -> dict[tuple[int, int], str]:
    """Brute force: the rule's verdict on every pair of documents that share a shingle.
    Every other pair shares no word shingle, so no coverage and no passage: it can be
    neither a duplicate nor a partial copy."""
    index: dict[int, list[int]] = collections.defaultdict(list)
    for d, p in enumerate(profiles):
        for h in p.shingle_set.tolist():
            index[h].append(d)
    sharing = {(a, b) for docs in index.values() for i, a in enumerate(docs) for b in docs[i + 1 :]}
    return {pair: judge(profiles[pair[0]], profiles[pair[1]]).label for pair in sharing}


def test_every_verdict_is_the_rules(profiles, local_result) -> None:
    result = local_result
    assert result.pairs.shape[0] > 300
    for k, (a, b) in enumerate(result.pairs.tolist()):
        assert a < b
        verdict = judge(profiles[a], profiles[b])
        assert result.verdicts.label(k) == verdict.label
        assert result.verdicts.scores[k] == verdict.score
        if verdict.label != "unrelated":
            assert result.verdicts.features(k) == verdict.features
        else:
            with pytest.raises(KeyError):
                result.verdicts.features(k)


def test_pairs_rows_are_the_candidates_the_rule_relates(planted, profiles, local_result) -> None:
    _, docs = planted
    ids = [d["id"] for d in docs]
    expected = []
    for a, b in local_result.pairs.tolist():
        verdict = judge(profiles[a], profiles[b])
        if verdict.label != "unrelated":
            plain = verdict.to_dict()
            expected.append(
                {
                    "id_a": ids[a],
                    "id_b": ids[b],
                    "relation": plain["label"],
                    "score": plain["score"],
                    "features": plain["features"],
                }
            )
    rows = list(local_result.pair_rows())
    assert rows == expected
    assert {r["relation"] for r in rows} == {"duplicate", "partial", "similar"}


def _components(n: int, edges: list[tuple[int, int]]) -> list[int]:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return [find(x) for x in range(n)]


def test_dedup_clusters_follow_the_duplicate_verdicts(planted, local_result) -> None:
    """``components``: the connected components of the duplicate verdicts; ``centers`` (the
    default): every removed document has a duplicate verdict with the document kept for it,
    and no two kept documents are duplicates of each other."""
    path, docs = planted
    n = len(docs)
    components = run(path, DedupConfig(partition_size=100, clusters="components"))
    centers = run(path, DedupConfig(partition_size=100))
    assert np.array_equal(components.pairs, local_result.pairs)
    verdict = {
        tuple(p): local_result.verdicts.label(k) for k, p in enumerate(local_result.pairs.tolist())
    }
    duplicates = [p for p, label in verdict.items() if label == "duplicate"]
    expected = _components(n, duplicates)
    assert components.labels.tolist() == expected
    assert components.summary.removed == n - len(set(expected)) > 50
    kept = centers.kept_of.tolist()
    for d in range(n):
        if kept[d] != d:
            assert verdict[tuple(sorted((d, kept[d])))] == "duplicate"
            assert kept[kept[d]] == kept[d]
            score = judge(docs[d]["text"], docs[kept[d]]["text"]).score
            assert centers.score[d] == score
    centers_kept = {k for k in kept}
    assert not any(a in centers_kept and b in centers_kept for a, b in duplicates)
    assert 0 < centers.summary.removed <= components.summary.removed
    # The kept document of a cluster is its earliest: never a 1988 copy when its original
    # (1987) is in the cluster.
    index = {d["id"]: i for i, d in enumerate(docs)}
    for result in (components, centers):
        labels = result.labels.tolist()
        for d, doc in enumerate(docs):
            if doc["id"].startswith(("copy", "cut")):
                original = index[doc["id"].split("-", 1)[1]]
                if labels[d] == labels[original]:
                    assert not docs[int(result.kept_of[d])]["id"].startswith(("copy", "cut"))


def _longest_shared_run(a: np.ndarray, b: np.ndarray) -> int:
    """Longest run of equal consecutive tokens in both (dynamic programming)."""
    best = 0
    row = [0] * (len(b) + 1)
    bl = b.tolist()
    for x in a.tolist():
        prev = 0
        for j, y in enumerate(bl, start=1):
            saved = row[j]
            row[j] = prev + 1 if x == y else 0
            best = max(best, row[j])
            prev = saved
    return best


def test_candidates_reach_every_shared_passage(planted, all_verdicts, local_result) -> None:
    """Recall of the candidate stage against every pair (enumerated by brute force): every
    planted truncated reprint and excerpt is proposed (the winnowing guarantee: they share a
    run of more than the rule's passage length), and so is every pair the rule calls
    duplicate or partial, but for a few (at most 5 %) that share no such run: pages that are
    mostly tables, whose few words of prose the rule compares (measured, docs/batch.md)."""
    _, docs = planted
    rule = RuleConfig()
    candidates = {tuple(p) for p in local_result.pairs.tolist()}
    copied = {p for p, label in all_verdicts.items() if label in ("duplicate", "partial")}
    missed = copied - candidates
    assert len(copied) > 200
    assert len(missed) <= 0.05 * len(copied)
    tokens = [token_hashes(d["text"], rule.text, TOKEN_SEED) for d in docs]
    for a, b in missed:
        assert _longest_shared_run(tokens[a], tokens[b]) < rule.partial_min_passage
    index = {d["id"]: i for i, d in enumerate(docs)}
    labels = {
        tuple(p): local_result.verdicts.label(k) for k, p in enumerate(local_result.pairs.tolist())
    }
    planted_labels = collections.Counter()
    for d in docs:
        if d["id"].startswith(("cut", "excerpt")):
            pair = tuple(sorted((index[d["id"]], index[d["id"].split("-", 1)[1]])))
            assert pair in candidates
            kind = "cut" if d["id"].startswith("cut") else "excerpt"
            planted_labels[kind, labels[pair]] += 1
    # What the rule makes of them (tables' furniture aside): cuts are duplicates, excerpts
    # partial copies.
    assert planted_labels["cut", "duplicate"] >= 20
    assert planted_labels["excerpt", "partial"] >= 18


def test_lsh_alone_misses_excerpts(planted, all_verdicts) -> None:
    """Why the passages source is there: MinHash LSH at Jaccard 0.5 proposes none of the
    planted excerpts, most of which the rule calls partial copies."""
    path, docs = planted
    lsh = run(path, DedupConfig(candidates=("lsh",), partition_size=100), mode="pairs")
    proposed = {tuple(p) for p in lsh.pairs.tolist()}
    index = {d["id"]: i for i, d in enumerate(docs)}
    excerpts = [
        tuple(sorted((index[d["id"]], index[d["id"].split("-", 1)[1]])))
        for d in docs
        if d["id"].startswith("excerpt")
    ]
    assert not any(p in proposed for p in excerpts)
    assert sum(all_verdicts[p] == "partial" for p in excerpts) >= 18


def test_identical_output_single_process_and_dask(planted, local_result) -> None:
    distributed = pytest.importorskip("distributed")
    path, _ = planted
    expected = list(local_result.pair_rows())
    local_dedup = run(path, DedupConfig(partition_size=100))
    for workers in (1, 2):
        with (
            distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=False, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            result = run(path, DedupConfig(partition_size=100), client=client, mode="pairs")
            # dedup's lazy judging on Dask: tasks started one by one, taken as they finish.
            lazy = run(path, DedupConfig(partition_size=100), client=client)
        assert list(result.rows()) == list(local_result.rows())
        assert np.array_equal(result.pairs, local_result.pairs)
        assert list(result.pair_rows()) == expected
        assert list(lazy.row_text()) == list(local_dedup.row_text())
        assert lazy.summary.judged_pairs < lazy.pairs.shape[0]


def test_partition_size_does_not_change_output(planted, local_result) -> None:
    path, _ = planted
    other = run(path, DedupConfig(partition_size=1000), mode="pairs")
    assert list(other.rows()) == list(local_result.rows())
    assert list(other.pair_rows()) == list(local_result.pair_rows())


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
    result = run(path, DedupConfig(keep=keep))
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
    assert result.summary.profiled_documents == 3
    # Greedy centers need only the kept document's two verdicts, not the third pair's.
    assert result.summary.verified_pairs == result.summary.verdicts["duplicate"] == 2
    assert result.summary.judged_pairs == 2 < result.summary.candidate_pairs == 3


def test_against_removes_only_new_documents(tmp_path: Path) -> None:
    path, story = _small_corpus(tmp_path)
    existing = _write(
        tmp_path / "existing.jsonl",
        [{"id": "archive-1", "text": story, "date": "1990-01-01T00:00:00Z"}],
    )
    result = run(path, DedupConfig(), against=existing)
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


def test_pairs_output_relations(tmp_path: Path, reuters_docs: list[dict[str, Any]]) -> None:
    long_doc = next(d for d in reuters_docs if len(d["text"].split()) > 300)
    host = next(d for d in reuters_docs if 150 < len(d["text"].split()) < 250)
    words = long_doc["text"].split()
    host_words = host["text"].split()
    excerpt = " ".join(host_words[:100] + words[100:150] + host_words[100:])
    docs = [
        {"id": "full", "text": long_doc["text"]},
        {"id": "copy", "text": long_doc["text"]},
        {"id": "cut", "text": " ".join(words[: int(len(words) * 0.6)])},
        {"id": "excerpt", "text": excerpt},
        {"id": "other", "text": next(d["text"] for d in reuters_docs[1:] if d["text"])},
    ]
    path = _write(tmp_path / "p.jsonl", docs)
    out = tmp_path / "pairs.jsonl"
    summary = find_pairs(path, out, DedupConfig())
    check_complete(out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    relation = {(r["id_a"], r["id_b"]): r["relation"] for r in rows}
    assert relation[("full", "copy")] == "duplicate"
    assert relation[("full", "cut")] == "duplicate"  # a truncated reprint
    assert relation[("full", "excerpt")] == "partial"
    assert relation[("copy", "excerpt")] == "partial"
    assert summary.verdicts["duplicate"] == 3
    assert summary.verified_pairs == len(rows)  # the related pairs written
    for r in rows:
        assert set(r) == {"id_a", "id_b", "relation", "score", "features"}
        text = {d["id"]: d["text"] for d in docs}
        assert r == {
            "id_a": r["id_a"],
            "id_b": r["id_b"],
            "relation": judge(text[r["id_a"]], text[r["id_b"]]).label,
            "score": round(judge(text[r["id_a"]], text[r["id_b"]]).score, 6),
            "features": judge(text[r["id_a"]], text[r["id_b"]]).features.to_dict(),
        }


def test_dedup_writes_outputs_and_skips_a_finished_run(tmp_path: Path, planted) -> None:
    path, docs = planted
    out = tmp_path / "out.jsonl"
    kept = tmp_path / "kept.jsonl.gz"
    cfg = DedupConfig(partition_size=300)
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
    cfg = DedupConfig(partition_size=100)
    out = tmp_path / "out.jsonl"
    real = signing_module._sign_task
    calls = collections.Counter[str]()

    def failing(*args):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt  # the user pressed Ctrl-C during partition 3
        return real(*args)

    monkeypatch.setattr(signing_module, "_sign_task", failing)
    with pytest.raises(KeyboardInterrupt):
        dedup(path, out, cfg, worker_reads=worker_reads)
    assert not out.exists()
    assert (tmp_path / "out.jsonl.work").exists()
    monkeypatch.setattr(signing_module, "_sign_task", real)
    summary = dedup(path, out, cfg, worker_reads=worker_reads)
    assert summary.resumed_partitions == 3
    fresh = tmp_path / "fresh.jsonl"
    dedup(path, fresh, cfg, worker_reads=worker_reads)
    assert out.read_bytes() == fresh.read_bytes()


def test_run_stopped_while_judging_resumes_from_the_profile_table(
    tmp_path: Path, planted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The profiles are joined into one table before judging; a run stopped while judging
    resumes from it (nothing re-profiled), with the same output."""
    from neardup.batch import judging, profiles

    path, _ = planted
    cfg = DedupConfig(partition_size=100)
    out = tmp_path / "out.jsonl"

    def stopped(*args):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(judging, "_verify_chunk", stopped)
        with pytest.raises(KeyboardInterrupt):
            dedup(path, out, cfg)
    work = tmp_path / "out.jsonl.work"
    names = sorted(p.name for p in work.iterdir())
    assert "table.done-000000.npy" in names and "table.shingles-000000.npy" in names
    assert not [n for n in names if n.startswith("pay.")]  # moved into the table

    def profiled(*args):  # type: ignore[no-untyped-def]
        raise AssertionError("a resumed run profiled again")

    with monkeypatch.context() as patch:
        patch.setattr(profiles, "partition_profiles", profiled)
        patch.setattr(judging, "partition_profiles", profiled)
        dedup(path, out, cfg)
    fresh = tmp_path / "fresh.jsonl"
    dedup(path, fresh, cfg)
    assert out.read_bytes() == fresh.read_bytes()


def test_bad_config_is_config_error() -> None:
    for bad in (
        {"lsh_threshold": 1.5},
        {"lsh_threshold": 0.0},
        {"candidates": ("magic",)},
        {"candidates": ()},
        {"candidates": ("lsh", "lsh")},
        {"candidates": "lsh"},
        {"keep": "random"},
        {"num_perm": 1},
        {"bands": 0},
        {"partition_size": 0},
        {"rule": "strict"},
    ):
        with pytest.raises(ConfigError):
            DedupConfig(**bad)  # type: ignore[arg-type]


def test_passage_window_follows_the_rule() -> None:
    assert DedupConfig().passage_window == 27  # 30 words: 27 shingles of 4
    rule = RuleConfig(partial_min_passage=50, width=5)
    assert DedupConfig(rule=rule).passage_window == 46


def test_work_dir_cleanup_touches_only_its_own_files(tmp_path: Path) -> None:
    path, _ = _small_corpus(tmp_path)
    work = tmp_path / "mywork"
    work.mkdir()
    (work / "notes.json").write_text("{}")
    (work / "sig.keys-000000.npy.bak").write_text("user file")
    dedup(path, tmp_path / "out.jsonl", DedupConfig(), work_dir=work)
    assert sorted(p.name for p in work.iterdir()) == ["notes.json", "sig.keys-000000.npy.bak"]


def _judge_every_pair(pairs, rank, pinned, judging, **costs):  # type: ignore[no-untyped-def]
    m = pairs.shape[0]
    judging.start(np.arange(m, dtype=np.int64))
    labels, scores = np.empty(m, dtype=np.int8), np.empty(m)
    while judging.running():
        todo, verdicts = judging.next()
        labels[todo], scores[todo] = verdicts.labels, verdicts.scores
    empty = PairVerdicts.empty()
    everything = PairVerdicts(labels, scores, empty.kept, empty.counts, empty.cosine)
    return everything, np.ones(m, dtype=bool)


@pytest.mark.parametrize("keep", ["earliest", "longest"])
def test_lazy_judging_gives_the_clusters_of_judging_every_pair(
    planted, keep: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = planted
    cfg = DedupConfig(partition_size=100, keep=keep)
    lazy = run(path, cfg)
    monkeypatch.setattr(engine_module, "lazy_verdicts", _judge_every_pair)
    full = run(path, cfg)
    assert lazy.summary.judged_pairs < full.summary.judged_pairs == full.pairs.shape[0]
    np.testing.assert_array_equal(lazy.kept_of, full.kept_of)
    np.testing.assert_array_equal(lazy.labels, full.labels)
    np.testing.assert_array_equal(lazy.score, full.score)
    assert list(lazy.row_text()) == list(full.row_text())
    assert lazy.summary.removed == full.summary.removed > 50


def test_lazy_judging_on_large_clusters(
    tmp_path: Path, reuters_docs: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stories replicated with edits (every pair of a story's copies is a candidate), with
    typographic variants: the same clusters as judging every pair, from far fewer verdicts."""
    rng = random.Random(7)
    stories = [d for d in reuters_docs if len(d["text"]) > 1500][:12]
    docs = []
    for s, src in enumerate(stories):
        for c in range(25):
            text = perturb_words(src["text"], rng.uniform(0.0, 0.3), rng, insertion="duplicate")
            if c % 3 == 0:
                text = text.replace('"', "\u201c").replace("'", "\u2019")
            docs.append({"id": f"s{s}-{c}", "text": text})
    path = _write(tmp_path / "replicated.jsonl", docs)
    cfg = DedupConfig(partition_size=64)
    lazy = run(path, cfg)
    monkeypatch.setattr(engine_module, "lazy_verdicts", _judge_every_pair)
    full = run(path, cfg)
    assert lazy.summary.judged_pairs * 3 < full.summary.judged_pairs
    np.testing.assert_array_equal(lazy.kept_of, full.kept_of)
    np.testing.assert_array_equal(lazy.score, full.score)
    assert list(lazy.row_text()) == list(full.row_text())
    assert lazy.summary.removed == full.summary.removed > 100
