"""Every comparison side by side on the same day, and the table of benchmarks/README.md.

One command runs each benchmark script (each one alternates its contenders and repeats them
itself, so a shared machine's drift falls on all of them alike), collects their JSON under
``benchmarks/results/run_all/``, and writes one table of ratios, with the machine, its load
before and after each section, and the date, between the ``run_all`` markers of
``benchmarks/README.md``.  Ratios, not absolute times, are the claims: the table gives the
absolute figures only to show what the ratios are of.

Sections (``--only a,b`` runs some; ``--quick`` shrinks every size to finish in minutes):

==========  ================================================================================
startup     ``import neardup`` and ``neardup dedup`` of 100 Reuters articles (CPU, warm cache)
sign        ``bench_sign.py``: MinHash signing vs datasketch ``MinHash.bulk`` and rensa's batch
            API, on Reuters, the same Reuters with typographic punctuation, and scraped news
resultset   ``bench_resultset.py``: result-set dedup of 100 articles (the default coverage
            sketch) vs datasketch MinHashLSH and the sentence sketch, Reuters and web news
hamming     ``bench_hamming.py``: exact Hamming queries (SimHash, d <= 3) vs faiss
            ``IndexBinaryMultiHash``
lsh         ``bench_lsh.py``: LSH inserts and queries vs rensa and datasketch, single calls and
            each library's batch calls
batch       ``bench_batch.py``: batch dedup from JSONL vs rensa's batch API and datasketch, on
            planted Reuters copies (ASCII), the same in typographic punctuation, and replicated
            scraped news; neardup with ``--workers 2`` too
ingest      ``bench_ingest.py``: the news stream's ingest rate, ASCII and typographic, with the
            ``simhash`` package's rate in the same run as the machine's yardstick
==========  ================================================================================

Run:  ``python benchmarks/run_all.py [--quick] [--only sign,lsh] [--no-readme]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import RESULTS, loadavg, machine

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = RESULTS / "run_all"
README = HERE / "README.md"
BEGIN, END = "<!-- run_all:begin -->", "<!-- run_all:end -->"


def _run(args: list[str], timeout: float) -> None:
    """Run a benchmark script with this interpreter; its output goes to the terminal."""
    print("$", " ".join(args), flush=True)
    subprocess.run([sys.executable, *args], cwd=ROOT, check=True, timeout=timeout)


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((OUT / f"{name}.json").read_text())
    return data


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cpu_of(cmd: list[str], repeat: int) -> list[float]:
    """CPU seconds (user + system) of ``repeat`` runs of ``cmd``, after one warm-up run.

    Warm means every cache a user's second run has: numba's kernels and Python's bytecode
    (written even where the environment says ``PYTHONDONTWRITEBYTECODE``)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = []
    for i in range(repeat + 1):
        before = _children_cpu()
        subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, env=env)
        if i:
            out.append(_children_cpu() - before)
    return out


# --- sections -------------------------------------------------------------------------------


def startup(quick: bool) -> None:
    """``import neardup`` and a 100-article ``neardup dedup``, CPU seconds, median of runs."""
    from _common import read_reuters

    repeat = 5 if quick else 9
    with tempfile.TemporaryDirectory(prefix="neardup-startup-") as tmp:
        corpus = Path(tmp) / "d100.jsonl"
        with corpus.open("w") as fh:
            n = 0
            for row in read_reuters():
                if len(row["text"]) >= 200:
                    fh.write(json.dumps({"id": row["id"], "text": row["text"]}) + "\n")
                    n += 1
                    if n == 100:
                        break
        out = Path(tmp) / "out.jsonl"
        neardup = str(Path(sys.executable).with_name("neardup"))
        dedup = [
            "sh",
            "-c",
            f"rm -rf {out} {out}.complete {out}.work; "
            f"exec {neardup} dedup {corpus} -o {out} --no-progress",
        ]
        result = {
            "python_only": _cpu_of([sys.executable, "-c", "pass"], repeat),
            "import_neardup": _cpu_of([sys.executable, "-c", "import neardup"], repeat),
            "import_numba": _cpu_of([sys.executable, "-c", "import numba"], repeat),
            "import_numpy": _cpu_of(
                ["sh", "-c", f"OPENBLAS_NUM_THREADS=1 exec {sys.executable} -c 'import numpy'"],
                repeat,
            ),
            "dedup_100": _cpu_of(dedup, repeat),
        }
    summary = {k: {"median": statistics.median(v), "all": v} for k, v in result.items()}
    _save("startup", {"cpu_seconds": summary, "load": loadavg()})


def sign(quick: bool) -> None:
    _run(
        [
            "benchmarks/bench_sign.py",
            *(["--quick"] if quick else []),
            "--out",
            str(OUT / "sign.json"),
        ],
        3600,
    )


def resultset(quick: bool) -> None:
    _run(["benchmarks/bench_resultset.py", "--out", str(OUT / "resultset.json")], 1800)


def hamming(quick: bool) -> None:
    n = "1000000" if quick else "10000000"
    _run(
        [
            "benchmarks/bench_hamming.py",
            "--n",
            n,
            "--layouts",
            "4",
            "--out",
            str(OUT / "hamming.json"),
        ],
        3600,
    )


def lsh(quick: bool) -> None:
    n, rounds = ("200000", "2") if quick else ("1000000", "3")
    _run(
        [
            "benchmarks/bench_lsh.py",
            "--n",
            n,
            "--rounds",
            rounds,
            "--libs",
            "neardup,rensa,datasketch,neardup-bulk,rensa-bulk",
            "--time-limit",
            "30" if quick else "120",
            "--out",
            str(OUT / "lsh.json"),
        ],
        7200,
    )


def batch(quick: bool) -> None:
    n, repeat = ("20000", "2") if quick else ("100000", "3")
    for text in ("planted", "typographic", "provenance"):
        systems = (
            "neardup-1proc,neardup,rensa,datasketch"
            if text == "planted"
            else ("neardup-1proc,rensa,datasketch")
        )
        _run(
            [
                "benchmarks/bench_batch.py",
                "--n",
                n,
                "--repeat",
                repeat,
                "--text",
                text,
                "--systems",
                systems,
                "--workers",
                "2",
                "--out",
                str(OUT / f"batch_{text}.json"),
            ],
            7200,
        )


def ingest(quick: bool) -> None:
    limit = "30" if quick else "120"
    for flavour, extra in (("ascii", []), ("typographic", ["--typographic"])):
        _run(
            [
                "benchmarks/bench_ingest.py",
                "--n",
                "1000000",
                "--time-limit",
                limit,
                "--main-only",
                "--out",
                f"run_all/ingest_{flavour}",
                *extra,
            ],
            3600,
        )


SECTIONS: dict[str, Callable[[bool], None]] = {
    "startup": startup,
    "sign": sign,
    "resultset": resultset,
    "hamming": hamming,
    "lsh": lsh,
    "batch": batch,
    "ingest": ingest,
}


def _save(name: str, payload: dict[str, Any]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(payload, indent=2) + "\n")


# --- the table --------------------------------------------------------------------------------


def _fmt(x: float, digits: int = 2) -> str:
    return f"{x:,.{digits}f}"


def _rows_startup(d: dict[str, Any]) -> list[list[str]]:
    c = d["cpu_seconds"]
    return [
        [
            "start-up",
            "`import neardup`, CPU s (median)",
            _fmt(c["import_neardup"]["median"], 3),
            f"python alone {_fmt(c['python_only']['median'], 3)}; `import numba` "
            f"{_fmt(c['import_numba']['median'], 3)}",
            "≤ 0.15 s",
        ],
        [
            "start-up",
            "`neardup dedup` of 100 articles, CPU s (median)",
            _fmt(c["dedup_100"]["median"], 3),
            "warm cache; `import numpy` alone "
            + (_fmt(c["import_numpy"]["median"], 3) if "import_numpy" in c else "?"),
            "≤ 0.4 s",
        ],
    ]


def _rows_sign(d: dict[str, Any]) -> list[list[str]]:
    rows = []
    for corpus, body in d["corpora"].items():
        r = body["ratios"]
        rows.append(
            [
                f"signing, {corpus}",
                "neardup MinHash 128 (per document, from raw text) vs "
                "rensa batch / datasketch `MinHash.bulk`, own tokens",
                f"{_fmt(r['neardup minhash 128 / rensa digest_matrix (own tokens)'])}× / "
                f"{_fmt(r['neardup minhash 128 / datasketch MinHash.bulk (own tokens)'])}×",
                f"given neardup's shingles free: "
                f"{_fmt(r['neardup minhash 128 / rensa digest_matrix (given shingles)'])}× / "
                f"{_fmt(r['neardup minhash 128 / datasketch MinHash.bulk (given shingles)'])}×; "
                f"{_fmt(body['results']['neardup minhash 128']['mb_per_s'])} MB/s",
                "",
            ]
        )
    u = d["neardup_unicode_mb_rate_vs_ascii"]
    rows.append(
        [
            "signing",
            "neardup on typographic Reuters / on the same ASCII documents (docs/s, interleaved)",
            f"{_fmt(u['neardup minhash 128'])}×",
            f"batch signer {_fmt(u['neardup batch minhash 128'])}×",
            "≥ 0.8×",
        ]
    )
    return rows


def _rows_resultset(d: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, label in (
        ("100_reuters_with_planted_copies", "100 Reuters articles (10 planted copies)"),
        ("100_web_news", "100 scraped web news articles"),
    ):
        if name not in d:
            continue
        r = d[name]
        rows.append(
            [
                "result set",
                f"{label}: default (coverage sketch) vs datasketch MinHashLSH / sentence sketch",
                f"{_fmt(r['speedup_vs_datasketch'], 0)}× / "
                f"{_fmt(1 / r['ratio_coverage_to_sentences'], 2)}×",
                f"median {_fmt(r['coverage']['median_us'], 1)} µs, "
                f"cache hit {_fmt(r['coverage_cache_hit']['median_us'], 1)} µs",
                "≤ 100 µs, hit ≤ 10 µs",
            ]
        )
    return rows


def _rows_hamming(d: dict[str, Any]) -> list[list[str]]:
    rows = []
    for r in d["neardup"]:
        if "faiss_median_over_neardup_median" in r:
            rows.append(
                [
                    f"Hamming index {d['n']:,}, d ≤ {d['max_distance']}",
                    f"neardup {r['layout']} vs faiss IndexBinaryMultiHash: single queries, "
                    "wall / CPU",
                    f"{_fmt(r['faiss_median_over_neardup_median'], 1)}× / "
                    f"{_fmt(r['faiss_cpu_median_over_neardup_cpu_median'], 1)}×",
                    f"median {_fmt(r['single_query']['median_us'], 1)} µs",
                    "",
                ]
            )
    return rows


def _rows_lsh(d: dict[str, Any]) -> list[list[str]]:
    c = d["contenders"]
    rows = []
    for label, ours, theirs in (
        ("single calls", "neardup", "rensa"),
        ("batch calls", "neardup-bulk", "rensa-bulk"),
        ("single calls", "neardup", "datasketch"),
    ):
        if ours not in c or theirs not in c:
            continue
        ins = c[ours]["insert_per_cpu_s"]["median"] / c[theirs]["insert_per_cpu_s"]["median"]
        qry = c[ours]["query_per_cpu_s"]["median"] / c[theirs]["query_per_cpu_s"]["median"]
        rows.append(
            [
                f"LSH {d['n']:,} × {d['bands']}x{d['rows']}",
                f"neardup vs {theirs}, {label}: inserts / queries per CPU s",
                f"{_fmt(ins)}× / {_fmt(qry)}×",
                f"neardup {_fmt(c[ours]['rss_bytes_per_doc'], 0)} B/doc RSS, {theirs} "
                f"{_fmt(c[theirs]['rss_bytes_per_doc'], 0)}",
                "≥ 1.0×" if theirs == "rensa" else "",
            ]
        )
    return rows


def _rows_batch(text: str, d: dict[str, Any]) -> list[list[str]]:
    s = d["systems"]
    one = s["neardup-1proc"]
    rows = []
    for other in ("rensa", "datasketch"):
        if other in s:
            rows.append(
                [
                    f"batch {d['n']:,}, {text}",
                    f"neardup (one process) vs {other}: CPU, wall",
                    f"{_fmt(s[other]['cpu_seconds'] / one['cpu_seconds'])}× / "
                    f"{_fmt(s[other]['seconds'] / one['seconds'])}×",
                    f"F1 {_fmt(one['f1'], 4)} vs {_fmt(s[other]['f1'], 4)}",
                    "≥ 2× vs rensa" if other == "rensa" else "",
                ]
            )
    if "neardup" in s:
        rows.append(
            [
                f"batch {d['n']:,}, {text}",
                "`--workers 2` vs one process, wall",
                f"{_fmt(one['seconds'] / s['neardup']['seconds'])}×",
                "only when both cores are free",
                "≥ 1.6×",
            ]
        )
    return rows


def _rows_ingest(ascii_: dict[str, Any], typo: dict[str, Any]) -> list[list[str]]:
    a, t = ascii_["main"], typo["main"]
    ya = statistics.mean(a["machine_speed_simhash_pkg_per_cpu_s_before_after"])
    yt = statistics.mean(t["machine_speed_simhash_pkg_per_cpu_s_before_after"])
    return [
        [
            "ingest (stream)",
            "articles per CPU s, typographic / ASCII",
            f"{_fmt(t['articles_per_cpu_s'] / a['articles_per_cpu_s'])}×",
            f"ASCII {_fmt(a['articles_per_cpu_s'], 0)}/CPU s over {a['articles']:,}",
            "≥ 0.8×",
        ],
        [
            "ingest (stream)",
            "neardup / the `simhash` package (yardstick, same run)",
            f"{_fmt(a['articles_per_cpu_s'] / ya)}×",
            f"typographic {_fmt(t['articles_per_cpu_s'] / yt)}×",
            "",
        ],
    ]


def table() -> str:
    rows: list[list[str]] = []
    builders: list[tuple[str, Callable[[], list[list[str]]]]] = [
        ("startup", lambda: _rows_startup(_load("startup"))),
        ("sign", lambda: _rows_sign(_load("sign"))),
        ("resultset", lambda: _rows_resultset(_load("resultset"))),
        ("hamming", lambda: _rows_hamming(_load("hamming"))),
        ("lsh", lambda: _rows_lsh(_load("lsh"))),
        *[
            (f"batch_{t}", lambda t=t: _rows_batch(t, _load(f"batch_{t}")))
            for t in ("planted", "typographic", "provenance")
        ],
        ("ingest", lambda: _rows_ingest(_load("ingest_ascii"), _load("ingest_typographic"))),
    ]
    missing = []
    for name, build in builders:
        try:
            rows.extend(build())
        except (FileNotFoundError, KeyError) as exc:
            missing.append(f"{name} ({type(exc).__name__}: {exc})")
    info = machine(("neardup", "numpy", "numba", "datasketch", "rensa", "faiss-cpu", "simhash"))
    sections = (
        json.loads((OUT / "sections.json").read_text()) if (OUT / "sections.json").exists() else {}
    )
    lines = [
        f"Run by `python benchmarks/run_all.py{' --quick' if sections.get('quick') else ''}` on "
        f"{sections.get('finished', info['date'])} (UTC): {info['platform']}, {info['cpu']} "
        f"({info['cpus']} cores), Python {info['python']}; "
        + ", ".join(f"{k} {v}" for k, v in info["versions"].items() if v)
        + ". Load average (1 min) before and after each section: "
        + "; ".join(
            f"{k} {v['load_before'][0]}→{v['load_after'][0]}"
            for k, v in sections.get("sections", {}).items()
        )
        + ". Ratios > 1 mean neardup is faster.",
        "",
        "| what | comparison | ratio | context | goal |",
        "|---|---|---|---|---|",
        *("| " + " | ".join(r) + " |" for r in rows),
    ]
    if missing:
        lines += ["", "Not measured in this run: " + "; ".join(missing) + "."]
    return "\n".join(lines)


def write_readme(text: str) -> None:
    readme = README.read_text()
    if BEGIN in readme and END in readme:
        head, rest = readme.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        readme = f"{head}{BEGIN}\n{text}\n{END}{tail}"
    else:
        readme = f"{readme.rstrip()}\n\n{BEGIN}\n{text}\n{END}\n"
    README.write_text(readme)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a few minutes")
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    parser.add_argument("--no-readme", action="store_true", help="print the table only")
    parser.add_argument("--table-only", action="store_true", help="rebuild the table from JSON")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if not args.table_only:
        # A partial run (--only) updates its sections and keeps the others' records.
        previous = OUT / "sections.json"
        log: dict[str, Any] = {"sections": {}}
        if previous.exists() and set(args.only.split(",")) != set(SECTIONS):
            log = json.loads(previous.read_text())
        log["quick"] = args.quick
        started = time.time()
        for name in args.only.split(","):
            before = loadavg()
            t0 = time.time()
            SECTIONS[name](args.quick)
            log["sections"][name] = {
                "quick": args.quick,
                "load_before": before,
                "load_after": loadavg(),
                "seconds": round(time.time() - t0, 1),
            }
            print(f"== {name} done in {time.time() - t0:.0f} s", flush=True)
        log["finished"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="minutes")
        log["seconds"] = round(time.time() - started, 1)
        log["machine"] = machine()
        log["env"] = {k: os.environ[k] for k in ("NEARDUP_DATA",) if k in os.environ}
        _save("sections", log)
    text = table()
    print(text)
    if not args.no_readme:
        write_readme(text)
        print(f"wrote the table into {README}")


if __name__ == "__main__":
    main()
