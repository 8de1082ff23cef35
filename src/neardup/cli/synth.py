"""``neardup synth CORPUS -o OUT``: copies with known edits and same-topic negatives.

Writes ``OUT/docs.jsonl`` (originals, copies and quotation receivers, each with a ``synth``
object: role, group, copy_of, edit, strength), ``OUT/labels.jsonl`` (pairs ``id1``, ``id2``,
``label`` duplicate/similar/different, ``edit``, ``strength``, ``kept``, ``novel``) and
``OUT/manifest.json`` (the parameters and counts).  Files are written under a temporary name
and renamed when complete, so a partial output is never mistaken for a finished one.
Label semantics: see :mod:`neardup.evaluation.synth`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from neardup.errors import StoreError

__all__ = ["synth"]


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    tmp = path.with_name(path.name + ".partial")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc}") from exc


@click.command("synth")
@click.argument("corpus", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Output directory (created): docs.jsonl, labels.jsonl, manifest.json.",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Random seed.")
@click.option("--copies-per-doc", default=3, show_default=True, type=int)
@click.option(
    "--negatives",
    "negatives_per_doc",
    default=1,
    show_default=True,
    type=int,
    help="Same-topic negatives per original.",
)
@click.option(
    "--quote-rate",
    default=0.1,
    show_default=True,
    type=float,
    help="Fraction of originals that lend a quotation to an independent story.",
)
@click.option(
    "--max-originals",
    default=1000,
    show_default=True,
    type=int,
    help="Eligible originals taken from the start of the corpus.",
)
@click.option("--min-words", default=60, show_default=True, type=int)
@click.option(
    "--edits",
    default=None,
    help="Comma-separated edit types (default: all; see docs/evaluation.md).",
)
def synth(
    corpus: Path,
    out_dir: Path,
    seed: int,
    copies_per_doc: int,
    negatives_per_doc: int,
    quote_rate: float,
    max_originals: int,
    min_words: int,
    edits: str | None,
) -> None:
    """Make a labelled near-duplicate benchmark from CORPUS (JSON Lines, .gz allowed)."""
    from neardup.evaluation.pairs import read_jsonl
    from neardup.evaluation.synth import COPY_EDITS, SynthConfig, synthesize

    chosen = tuple(e.strip() for e in edits.split(",") if e.strip()) if edits else COPY_EDITS
    cfg = SynthConfig(
        seed=seed,
        copies_per_doc=copies_per_doc,
        negatives_per_doc=negatives_per_doc,
        quote_rate=quote_rate,
        max_originals=max_originals,
        min_words=min_words,
        edits=chosen,
    )
    result = synthesize(read_jsonl(corpus), cfg)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create {out_dir}: {exc}") from exc
    _write_jsonl(out_dir / "docs.jsonl", result.docs)
    _write_jsonl(out_dir / "labels.jsonl", result.pairs)
    manifest = {
        "corpus": str(corpus),
        "config": cfg.to_dict(),
        "scheme_id": cfg.scheme_id,
        "docs": len(result.docs),
        "pairs": len(result.pairs),
        "labels": result.label_counts(),
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result.label_counts().items()))
    click.echo(
        f"wrote {len(result.docs)} documents and {len(result.pairs)} pairs ({counts}) to {out_dir}",
        err=True,
    )
