"""Ctrl-C at random moments of ``neardup dedup``: every run must end with exit 130 and a
message (or exit 0 when it finished first), never a traceback or a native crash, and leave
its output complete (matching an uninterrupted run) or absent, with no partial file.  (An
interrupt that lands after the output was finished, while the process is ending, gives exit
130 and a complete output.)

Each run starts ``neardup dedup`` in its own session and sends SIGINT to its process group
(as a terminal does) after a delay drawn uniformly from ``[--from, 1.05 x the uninterrupted
run time]``.  ``--from`` defaults to 0.1 s: before that the Python interpreter is still
starting (about 40 ms here) and answers Ctrl-C itself, before any neardup code runs; pass
``--from 0`` to include those moments (they are reported apart).  Each run starts from a
fresh output (no work folder to resume from), so the interrupts land in every stage.

    python benchmarks/bench_sigint.py                 # 200 runs, results/sigint.json
    python benchmarks/bench_sigint.py --runs 20 --workers 2
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import save
from neardup.batch.io import IncompleteOutputError, check_complete


def neardup() -> list[str]:
    script = Path(sys.executable).with_name("neardup")
    return [str(script)] if script.exists() else [sys.executable, "-m", "neardup"]


def default_sigint() -> None:
    """In the child before exec: Ctrl-C delivered as usual, even when this script runs where
    it is ignored (a background job of a non-interactive shell), which the child would
    inherit and, like every well-behaved program, keep."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def make_corpus(path: Path, docs: int, seed: int) -> None:
    """Random-word documents, 30 % of them near copies of recent ones."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(5000)]
    recent: list[list[str]] = []
    with path.open("w", encoding="utf-8") as fh:
        for i in range(docs):
            if recent and rng.random() < 0.3:
                words = list(rng.choice(recent))
                for _ in range(3):
                    words[rng.randrange(len(words))] = rng.choice(vocab)
            else:
                words = [rng.choice(vocab) for _ in range(120)]
                recent = [*recent[-500:], words]
            fh.write(json.dumps({"id": f"d{i}", "text": " ".join(words)}) + "\n")


def clean(folder: Path) -> None:
    for path in folder.iterdir():
        if path.name.startswith("out.jsonl"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def output_state(folder: Path, reference: str) -> str:
    out = folder / "out.jsonl"
    if list(folder.glob("*.partial")):
        return "partial file left"
    if not out.exists():
        return "absent"
    try:
        check_complete(out)
    except IncompleteOutputError:
        return "incomplete"
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    return "complete" if digest == reference else "complete but different"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--docs", type=int, default=40_000)
    parser.add_argument("--workers", type=int, default=None, help="dedup --workers")
    parser.add_argument("--from", dest="earliest", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="results JSON (default: sigint)")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="neardup-sigint-") as tmp:
        folder = Path(tmp)
        corpus = folder / "corpus.jsonl"
        make_corpus(corpus, args.docs, args.seed)
        command = [*neardup(), "dedup", str(corpus), "-o", str(folder / "out.jsonl")]
        if args.workers:
            command += ["--workers", str(args.workers)]
        began = time.monotonic()
        subprocess.run(command, check=True, capture_output=True)
        took = time.monotonic() - began
        reference = hashlib.sha256((folder / "out.jsonl").read_bytes()).hexdigest()
        print(f"uninterrupted run: {took:.2f} s over {args.docs} documents", flush=True)

        runs: list[dict[str, Any]] = []
        for n in range(args.runs):
            clean(folder)
            delay = rng.uniform(args.earliest, took * 1.05)
            proc = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=default_sigint,
            )
            time.sleep(delay)
            sent = proc.poll() is None
            if sent:
                os.killpg(proc.pid, signal.SIGINT)
            _, err_bytes = proc.communicate(timeout=600)
            err = err_bytes.decode("utf-8", "replace")
            state = output_state(folder, reference)
            code = proc.returncode
            # Interrupted: exit 130 with the message, the output absent, or complete when the
            # signal came after it was finished; or the run ended first: exit 0, complete.
            interrupted = code == 130 and "neardup: interrupted" in err
            ok = (interrupted and state in ("absent", "complete")) or (
                code == 0 and state == "complete"
            )
            runs.append(
                {
                    "delay_s": round(delay, 3),
                    "signal_sent": sent,
                    "exit": code,
                    "message": "neardup: interrupted" in err,
                    "traceback": "Traceback" in err,
                    "output": state,
                    "ok": ok,
                    **({} if ok else {"stderr_tail": err[-600:]}),
                }
            )
            if not ok:
                print(f"run {n}: delay {delay:.2f}s exit {code} output {state}\n{err[-600:]}")
            if (n + 1) % 20 == 0:
                print(f"{n + 1} runs, {sum(not r['ok'] for r in runs)} not clean", flush=True)

    exits = collections.Counter(str(r["exit"]) for r in runs)
    outputs = collections.Counter(r["output"] for r in runs)
    summary = {
        "runs": len(runs),
        "clean": sum(r["ok"] for r in runs),
        "exit_codes": dict(exits),
        "outputs": dict(outputs),
        "tracebacks": sum(r["traceback"] for r in runs),
        "killed_by_signal": sum(r["exit"] < 0 for r in runs),
        "uninterrupted_seconds": round(took, 2),
    }
    print(json.dumps(summary, indent=2))
    path = save(
        args.out or "sigint",
        {
            "command": "python benchmarks/bench_sigint.py " + " ".join(a for a in sys.argv[1:]),
            "config": {
                "runs": args.runs,
                "docs": args.docs,
                "workers": args.workers,
                "from_s": args.earliest,
                "seed": args.seed,
            },
            "summary": summary,
            "runs": runs,
        },
    )
    print(f"saved {path}")


if __name__ == "__main__":
    main()
