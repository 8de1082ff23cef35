"""Ctrl-C during ``dedup``, ``pairs``, ``ingest`` and ``origin``: exit 130 with a message,
never a traceback or a native crash; outputs complete or absent; what was printed is stored.

The console command runs in its own session and SIGINT goes to its process group, as a
terminal sends it.  ``benchmarks/bench_sigint.py`` does the same 200 times at random
moments; this is the short version.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neardup.batch.io import IncompleteOutputError, check_complete
from neardup.store import open_store

pytestmark = pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs POSIX signals")


def neardup() -> list[str]:
    script = Path(sys.executable).with_name("neardup")
    return [str(script)] if script.exists() else [sys.executable, "-m", "neardup"]


def make_corpus(path: Path, docs: int, seed: int = 0) -> Path:
    """Random-word documents, a third of them near copies of earlier ones."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(4000)]
    recent: list[list[str]] = []
    with path.open("w", encoding="utf-8") as fh:
        for i in range(docs):
            if recent and rng.random() < 0.3:
                words = list(rng.choice(recent))
                for _ in range(3):
                    words[rng.randrange(len(words))] = rng.choice(vocab)
            else:
                words = [rng.choice(vocab) for _ in range(100)]
                recent = [*recent[-300:], words]
            fh.write(json.dumps({"id": f"d{i}", "text": " ".join(words)}) + "\n")
    return path


def default_sigint() -> None:
    # The command keeps a Ctrl-C that was ignored when it started (as a background job of
    # a script would have it); the tests may run so, the command under test must not.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*neardup(), *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=default_sigint,
    )


def test_an_ignored_ctrl_c_stays_ignored(tmp_path: Path) -> None:
    # A background job of a non-interactive shell starts with SIGINT ignored: the command
    # must not make itself interruptible again (it finishes, exit 0).
    corpus = make_corpus(tmp_path / "in.jsonl", 3_000)
    proc = subprocess.Popen(
        [*neardup(), "dedup", str(corpus), "-o", str(tmp_path / "o.jsonl")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    check_complete(tmp_path / "o.jsonl")


def interrupt(proc: subprocess.Popen[bytes]) -> tuple[int, bytes, str]:
    """Ctrl-C, then the rest of stdout (through the buffered reader, which may hold part of
    it already) and stderr (small: a summary and a message)."""
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()
    err = proc.stderr.read()
    proc.wait(timeout=120)
    return proc.returncode, out, err.decode("utf-8", "replace")


def assert_clean_stop(code: int, err: str) -> None:
    assert code == 130, err
    assert "neardup: interrupted" in err
    assert "Traceback" not in err and "SystemError" not in err


def test_dedup_interrupted_at_any_moment_leaves_output_complete_or_absent(
    tmp_path: Path,
) -> None:
    corpus = make_corpus(tmp_path / "in.jsonl", 12_000)
    began = time.monotonic()
    done = subprocess.run(
        [*neardup(), "dedup", str(corpus), "-o", str(tmp_path / "ref.jsonl")],
        capture_output=True,
        check=True,
    )
    took = time.monotonic() - began
    assert b"documents: 12000" in done.stderr
    reference = (tmp_path / "ref.jsonl").read_bytes()
    out = tmp_path / "out.jsonl"
    for fraction in (0.15, 0.4, 0.65, 0.9):
        proc = start(["dedup", str(corpus), "-o", str(out)], tmp_path)
        time.sleep(fraction * took)
        if proc.poll() is not None:  # finished before the signal: a complete output
            assert proc.returncode == 0
            break
        code, _, err = interrupt(proc)
        if code == 0:  # the signal came as the process was ending: the output is complete
            check_complete(out)
            break
        assert_clean_stop(code, err)
        assert not list(tmp_path.glob("*.partial"))
        if out.exists():
            check_complete(out)  # finished just before the signal was handled
            break
    # the same command resumes (or finds the work done) and writes the same rows
    if out.exists():
        out.unlink()
        out.with_name(out.name + ".complete").unlink()
    subprocess.run([*neardup(), "dedup", str(corpus), "-o", str(out)], check=True)
    assert out.read_bytes() == reference
    assert not (tmp_path / "out.jsonl.work").exists()


def test_pairs_interrupted_leaves_output_complete_or_absent(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path / "in.jsonl", 8_000)
    out = tmp_path / "pairs.jsonl"
    proc = start(["pairs", str(corpus), "-o", str(out)], tmp_path)
    time.sleep(0.5)
    code, _, err = interrupt(proc)
    if code == 0:
        check_complete(out)  # a fast machine finished first
        return
    assert_clean_stop(code, err)
    assert not list(tmp_path.glob("*.partial"))
    if out.exists():
        check_complete(out)  # the rows were all written just before the signal was handled
    else:
        with pytest.raises(IncompleteOutputError):
            check_complete(out)


def test_ingest_interrupted_after_a_batch_keeps_every_printed_decision(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path / "in.jsonl", 3_000)
    store = tmp_path / "s.db"
    args = ["ingest", str(corpus), "--store", str(store), "--batch-size", "50"]
    proc = start(args, tmp_path)
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the first committed batch is out
    assert first
    code, rest, err = interrupt(proc)
    assert_clean_stop(code, err)
    lines = [first, *rest.splitlines(keepends=True)]
    assert all(line.endswith(b"\n") for line in lines)  # whole lines only
    decisions = [json.loads(line) for line in lines]
    assert 0 < len(decisions) < 3_000
    backend = open_store(str(store), create=False)
    try:
        assert backend.count() == len(decisions)  # printed == committed
    finally:
        backend.close()


def test_origin_interrupted_keeps_whole_rows_and_its_state(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path / "in.jsonl", 3_000)
    state = tmp_path / "state.npz"
    args = ["origin", str(corpus), "--memory", "8MB", "--state", str(state)]
    proc = start(args, tmp_path)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first
    code, rest, err = interrupt(proc)
    assert_clean_stop(code, err)
    rows = [json.loads(line) for line in [first, *rest.splitlines()]]
    assert rows and len(rows) < 3_000
    # The state holds exactly the documents written: going on over the first rows and one
    # more, the written ones are repeats (skipped) and only the next one is new.
    lines = corpus.read_text(encoding="utf-8").splitlines(keepends=True)
    more = tmp_path / "more.jsonl"
    more.write_text("".join(lines[: len(rows) + 1]), encoding="utf-8")
    again = subprocess.run(
        [*neardup(), "origin", str(more), "--state", str(state), "--on-error", "skip"],
        capture_output=True,
        check=True,
    )
    err_again = again.stderr.decode()
    assert f"; {len(rows)} malformed line" in err_again, err_again
    assert len(again.stdout.splitlines()) == 1
