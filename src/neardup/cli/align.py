"""``neardup align SOURCE ARTICLE``: which passages of an article come from a source.

Reads two UTF-8 text files (``-`` for standard input, at most one of them) and prints one JSON
object per aligned passage: the PAN fields (``this_offset``/``this_length`` in the article,
``source_offset``/``source_length`` in the source, in characters), ``similarity``, and the two
passages' text unless ``--no-text``.  The method is :func:`neardup.similarity.align_passages`
(seed-and-extend, Sanchez-Perez et al. 2014); it finds reworded copies as well as verbatim ones.
Exit codes as everywhere (docs/cli.md): 66 for a missing file, 65 for one that is not UTF-8
text, 74 for one that cannot be read, 2 for bad options.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from neardup.cli.common import require_input
from neardup.errors import ConfigError, InputError, StoreError
from neardup.similarity import AlignmentConfig, align_passages

__all__ = ["align"]


def _read(path: str) -> str:
    if path != "-":
        require_input(path)
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise StoreError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from exc


@click.command("align")
@click.argument("source", metavar="SOURCE")
@click.argument("article", metavar="ARTICLE")
@click.option(
    "--min-passage-chars",
    type=int,
    default=AlignmentConfig.min_passage_chars,
    show_default=True,
    help="Drop passages shorter than this (characters, on both sides): raise it to ignore"
    " short shared phrases.",
)
@click.option(
    "--text/--no-text",
    "with_text",
    default=True,
    show_default=True,
    help="Include the two passages' text in each row.",
)
def align(source: str, article: str, min_passage_chars: int, with_text: bool) -> None:
    """Passages of ARTICLE copied (verbatim or reworded) from SOURCE, as character spans."""
    if source == "-" and article == "-":
        raise ConfigError("only one of SOURCE and ARTICLE can be '-'")
    source_text, article_text = _read(source), _read(article)
    config = AlignmentConfig(min_passage_chars=min_passage_chars)
    passages = align_passages(source_text, article_text, config)
    copied = 0
    for p in passages:
        row = p.to_dict()
        if with_text:
            row["text"] = article_text[p.this_offset : p.this_end]
            row["source_text"] = source_text[p.source_offset : p.source_end]
        click.echo(json.dumps(row, ensure_ascii=False))
        copied += p.this_length
    share = copied / len(article_text) if article_text else 0.0
    click.echo(
        f"neardup align: {len(passages)} passage(s), {copied} of {len(article_text)} article"
        f" characters ({share:.1%}) from the source",
        err=True,
    )
