"""The click commands ``neardup synth`` and ``neardup eval pairs|clusters|alignment|stream``.

The measuring itself lives in :mod:`neardup.evaluation`; this module only parses options,
calls it and prints.

* ``synth CORPUS -o OUT``: writes ``OUT/docs.jsonl`` (originals, copies and quotation
  receivers, each with a ``synth`` object: role, group, copy_of, edit, strength),
  ``OUT/labels.jsonl`` (pairs ``id1``, ``id2``, ``label`` duplicate/similar/different,
  ``edit``, ``strength``, ``kept``, ``novel``, ``margin``) and ``OUT/manifest.json``.  Files are
  written under a temporary name and renamed when complete, so a partial output is never
  mistaken for a finished one.  Label semantics: :mod:`neardup.evaluation.synth`.
* ``eval pairs LABELS --docs DOCS``: labelled pairs -> precision, recall, F1 at the threshold
  and over a threshold sweep (best F1), ROC AUC and average precision, per method; with
  ``--by FIELD`` the recall / false-positive rate per group (e.g. per edit type); with
  ``--plots DIR`` PNG plots of the PR curves and the score distribution per label.
* ``eval clusters PREDICTED --gold GOLD``: ARI and B-cubed of a predicted clustering (e.g.
  ``neardup dedup`` output) against gold groups (e.g. ``neardup synth`` docs).
* ``eval alignment LABELS --docs DOCS``: labelled copied passages (character spans, the PAN
  2013 text alignment format) -> character precision / recall / F1 of one aligner per group,
  and the PAN measures for ``align_passages`` (:mod:`neardup.evaluation.alignment`).
* ``eval stream LABELS --docs DOCS``: the news stream's verdicts on labelled pairs against
  the labels and against :func:`neardup.rule.judge` on each pair
  (:mod:`neardup.evaluation.stream`).

Output of ``eval``: a readable summary, or one JSON object with ``--json``.  Errors are
:class:`~neardup.errors.NearDupError` subclasses, mapped to exit codes by ``neardup.cli.main``
(docs/cli.md).  ``synth`` reads its corpus by the shared ``--on-error`` convention; the
``eval`` commands measure, so they never skip: a malformed line stops them (exit 65) with
its file and line.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from neardup.cli.common import (
    BadLines,
    check_output,
    force_option,
    input_articles,
    on_error_option,
    require_input,
    warn,
)
from neardup.errors import ConfigError, InputError, StoreError
from neardup.records import Article, FieldNames

__all__ = ["eval_group", "synth"]

_F = TypeVar("_F", bound=Callable[..., Any])

# Parameter types shared by the commands (click types hold no state, so one serves all).
_FILE = click.Path(dir_okay=False, path_type=Path)
_DIR = click.Path(file_okay=False, path_type=Path)
# neardup.evaluation.synth.LABEL_RULES, default first (not imported: the CLI loads lazily)
_LABEL_RULES = ("guide", "editorial", "bag80")


def _json_option(help: str = "Print one JSON object.") -> Callable[[_F], _F]:
    """``--json``: print the result as one JSON object (see :func:`_emit`)."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def _docs_option(help: str) -> Callable[[_F], _F]:
    """``--docs``: the JSON Lines documents the labels refer to (required)."""
    return click.option("--docs", required=True, type=_FILE, help=help)


def _id_fields_option(default: str, what: str) -> Callable[[_F], _F]:
    """``--id-fields``: the two fields of a labels line that name ``what``."""
    return click.option(
        "--id-fields",
        default=default,
        show_default=True,
        help=f"The two fields of a LABELS line that name {what}.",
    )


def _id_fields(value: str) -> tuple[str, str]:
    """The two names of ``--id-fields`` (``ConfigError`` unless exactly two)."""
    fields = tuple(f.strip() for f in value.split(","))
    if len(fields) != 2 or not all(fields):
        raise ConfigError(f"--id-fields needs two comma-separated names, got {value!r}")
    return fields[0], fields[1]


def _plots_option(help: str) -> Callable[[_F], _F]:
    """``--plots``: a folder for PNG plots (none by default)."""
    return click.option("--plots", "plots_dir", type=_DIR, default=None, help=help)


def _make_folder(path: Path, what: str) -> None:
    """Create the output folder ``path`` (and its parents); ``StoreError`` (74) if it
    cannot be."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the {what} folder {path}: {exc.strerror or exc}") from exc


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    _write_text(
        path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    )


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".partial")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(f"cannot write {path}: {exc}") from exc


def _corpus_articles(path: str, bad: BadLines, seen: list[int]) -> Iterator[Article]:
    """The articles of a JSON Lines corpus by the shared ``--on-error`` convention; counts
    the non-blank lines in ``seen[0]``."""
    for line_no, article in input_articles(path, FieldNames()):
        seen[0] += 1
        if isinstance(article, InputError):
            bad.report(line_no, article)
        else:
            yield article


@click.command("synth")
@click.argument("corpus", type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Output folder (created; if it holds files, only with --force): docs.jsonl,"
    " labels.jsonl, manifest.json.",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Random seed.")
@click.option(
    "--copies-per-doc",
    default=3,
    show_default=True,
    type=int,
    help="Edited copies made of each original.",
)
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
@click.option(
    "--min-words",
    default=60,
    show_default=True,
    type=int,
    help="Originals need at least this many words.",
)
@click.option(
    "--edits",
    default=None,
    help="Comma-separated edit types (default: all; see docs/eval.md).",
)
@click.option(
    "--label-rule",
    type=click.Choice(_LABEL_RULES),
    default=_LABEL_RULES[0],
    show_default=True,
    help="Copy label rule for `label` (docs/eval.md); labels.jsonl carries every rule's"
    " label in `labels`.",
)
@on_error_option
@force_option
def synth(
    corpus: str,
    out_dir: Path,
    seed: int,
    copies_per_doc: int,
    negatives_per_doc: int,
    quote_rate: float,
    max_originals: int,
    min_words: int,
    edits: str | None,
    label_rule: str,
    on_error: str,
    force: bool,
) -> None:
    """Make a labelled near-duplicate benchmark from CORPUS (JSON Lines, .gz allowed)."""
    from neardup.evaluation.synth import COPY_EDITS, SynthConfig, synthesize

    require_input(corpus)
    check_output(out_dir, force)

    chosen = tuple(e.strip() for e in edits.split(",") if e.strip()) if edits else COPY_EDITS
    cfg = SynthConfig(
        seed=seed,
        copies_per_doc=copies_per_doc,
        negatives_per_doc=negatives_per_doc,
        quote_rate=quote_rate,
        max_originals=max_originals,
        min_words=min_words,
        edits=chosen,
        label_rule=label_rule,
    )
    bad = BadLines(on_error, corpus)
    seen = [0]
    try:
        result = synthesize(_corpus_articles(corpus, bad, seen), cfg)
    except InputError:
        if seen[0] == 0:
            warn(f"{corpus} holds no document")
        raise
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
    _write_text(out_dir / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result.label_counts().items()))
    click.echo(
        f"neardup synth: wrote {len(result.docs)} documents and {len(result.pairs)} pairs"
        f" ({counts}) to {out_dir}; {bad.summary()}",
        err=True,
    )


@click.group("eval")
def eval_group() -> None:
    """Measure quality on labelled data (pairs, clusters, alignment, stream)."""


def _emit(result: dict[str, Any], as_json: bool, text: str) -> None:
    if as_json:
        click.echo(json.dumps(result, indent=2, sort_keys=True))
    else:
        click.echo(text)


def _fmt(x: float | None) -> str:
    return "   -  " if x is None else f"{x:6.3f}"


def _pairs_text(results: dict[str, Any], threshold: float | None) -> str:
    lines = [
        f"{'method':16} {'thr':>6} {'P':>6} {'R':>6} {'F1':>6} | {'best thr':>8} {'P':>6} "
        f"{'R':>6} {'F1':>6} | {'AUC':>6} {'AP':>6}"
    ]
    for name, r in results.items():
        at, best = r["at_threshold"], r["best"]
        lines.append(
            f"{name:16} {at['threshold']:6.3f} {_fmt(at['precision'])} {_fmt(at['recall'])} "
            f"{_fmt(at['f1'])} | {best['threshold']:8.3f} {_fmt(best['precision'])} "
            f"{_fmt(best['recall'])} {_fmt(best['f1'])} | {_fmt(r['roc_auc'])} "
            f"{_fmt(r['average_precision'])}"
        )
    for name, r in results.items():
        groups = r.get("groups")
        if not groups:
            continue
        lines.append(f"\n{name} per group (at threshold): recall / false-positive rate")
        for g, v in groups.items():
            lines.append(
                f"  {g:28} pairs {v['pairs']:5}  recall {_fmt(v['recall'])}  "
                f"fpr {_fmt(v['false_positive_rate'])}  mean score {v['mean_score']:.3f}"
            )
    return "\n".join(lines)


@eval_group.command("pairs")
@click.argument("labels", type=_FILE)
@_docs_option("JSON Lines documents with id and text (.gz allowed).")
@click.option(
    "--method",
    "methods",
    multiple=True,
    help="Method(s) to score with (repeatable or comma-separated; default: "
    "every available neardup method). <method>+lcs adds LCS verification.",
)
@click.option(
    "--threshold",
    type=float,
    default=None,
    help="Decision threshold (default: each method's own default).",
)
@_id_fields_option("id1,id2", "the pair's documents")
@click.option(
    "--label-field", default="label", show_default=True, help="The field holding the label."
)
@click.option(
    "--positive",
    default="duplicate",
    show_default=True,
    help="Comma-separated label values that count as positive (besides true/1).",
)
@click.option(
    "--by",
    "group_field",
    default=None,
    help="Also report recall / false-positive rate per value of this pair field.",
)
@_plots_option("Write PNG plots (PR curves, score distributions) here.")
@_json_option()
def pairs_cmd(
    labels: Path,
    docs: Path,
    methods: tuple[str, ...],
    threshold: float | None,
    id_fields: str,
    label_field: str,
    positive: str,
    group_field: str | None,
    plots_dir: Path | None,
    as_json: bool,
) -> None:
    """Precision/recall/F1 of each method on labelled pairs LABELS."""
    from neardup.evaluation.methods import available_methods, get_method
    from neardup.evaluation.pairs import evaluate_scores, read_pairs, read_texts, score_labelled

    fields = _id_fields(id_fields)
    if threshold is not None and not math.isfinite(threshold):
        raise ConfigError(f"--threshold must be a finite number, got {threshold}")
    if plots_dir is not None:
        _make_folder(plots_dir, "--plots")  # before the scoring, not after it
    names = [n.strip() for m in methods for n in m.split(",") if n.strip()]
    if not names:
        names = available_methods(include_lcs=False, include_external=False)
    chosen = [get_method(n) for n in names]
    labelled = read_pairs(labels, fields, label_field, {p.strip() for p in positive.split(",")})
    texts = read_texts(docs, labelled.ids())
    groups = labelled.field(group_field) if group_field else None
    results: dict[str, Any] = {}
    scores: dict[str, Any] = {}
    for m in chosen:
        s = score_labelled(m, labelled, texts)
        scores[m.name] = s
        t = m.default_threshold if threshold is None else threshold
        results[m.name] = evaluate_scores(s, labelled.labels, t, groups)
    if plots_dir is not None:
        from neardup.evaluation.plots import plot_pr_curves, plot_score_distributions

        label_names = [str(r.get(label_field)) for r in labelled.records]
        try:
            paths = [
                plot_pr_curves(scores, labelled.labels, plots_dir / "pr_curves.png"),
                plot_score_distributions(
                    scores,
                    label_names,
                    plots_dir / "score_distributions.png",
                    thresholds={k: v["at_threshold"]["threshold"] for k, v in results.items()},
                ),
            ]
        except OSError as exc:
            raise StoreError(f"cannot write the plots in {plots_dir}: {exc}") from exc
        click.echo("plots: " + ", ".join(str(p) for p in paths), err=True)
    _emit({"methods": results}, as_json, _pairs_text(results, threshold))


@eval_group.command("clusters")
@click.argument("predicted", type=_FILE)
@click.option(
    "--gold",
    required=True,
    type=_FILE,
    help="Gold groups: synth docs.jsonl, id+group lines, or 'ids' group lines.",
)
@click.option(
    "--cluster-field",
    default=None,
    help="Field of PREDICTED naming the cluster (default: group, cluster, "
    "duplicate_of, original, canonical).",
)
@click.option(
    "--items",
    "items_from",
    type=_FILE,
    default=None,
    help="Evaluate over the ids of this JSON Lines file (default: the ids in GOLD).",
)
@_json_option()
def clusters_cmd(
    predicted: Path,
    gold: Path,
    cluster_field: str | None,
    items_from: Path | None,
    as_json: bool,
) -> None:
    """ARI and B-cubed of the clustering PREDICTED against gold groups."""
    from neardup.evaluation.pairs import evaluate_clusters, read_clustering, read_jsonl

    truth = read_clustering(gold)
    pred = read_clustering(predicted, cluster_field)
    items = None
    if items_from is not None:
        items = {str(o["id"]) for o in read_jsonl(items_from) if "id" in o}
    r = evaluate_clusters(truth, pred, items)
    if pred and r["unknown_predicted_ids"] == len(pred):
        warn(
            f"no id of {predicted} is in the gold ids: the scores compare unrelated sets"
            " (check --cluster-field, or give --items)"
        )
    b = r["bcubed"]
    _emit(
        r,
        as_json,
        f"items {r['items']}  gold clusters {r['gold_clusters']}  predicted clusters "
        f"{r['predicted_clusters']}\nARI {r['ari']:.4f}  B-cubed P {b['precision']:.4f} "
        f"R {b['recall']:.4f} F1 {b['f1']:.4f}",
    )


@eval_group.command("alignment")
@click.argument("labels", type=_FILE)
@_docs_option("JSON Lines documents with id and text (.gz allowed).")
@click.option(
    "--method",
    type=click.Choice(["passages", "origin"]),
    default="passages",
    show_default=True,
    help="passages: align_passages (PAN 2014 seed-and-extend); origin: origin detection.",
)
@_id_fields_option("susp,src", "the suspicious and the source document")
@click.option(
    "--by",
    "group_field",
    default="category",
    show_default=True,
    help="Report per value of this pair field (pairs without it are in the group 'all').",
)
@_json_option()
def alignment_cmd(
    labels: Path, docs: Path, method: str, id_fields: str, group_field: str, as_json: bool
) -> None:
    """Character-level quality of the copied passages one aligner finds in labelled pairs
    LABELS (PAN 2013 text alignment format: docs/eval.md), per group."""
    from neardup.evaluation.alignment import evaluate_alignment, read_alignment_labels
    from neardup.evaluation.pairs import read_texts

    pairs = read_alignment_labels(labels, _id_fields(id_fields), group_field)
    texts = read_texts(docs, {x for p in pairs for x in (p.susp, p.src)})
    scores = evaluate_alignment(pairs, texts, method=method)
    plain = {c: s.to_dict() for c, s in scores.items()}
    lines = [
        f"{'group':28} {'pairs':>6} {'P':>7} {'R':>7} {'F1':>7} | {'PAN P':>7} {'PAN R':>7}"
        f" {'gran':>6} {'plagdet':>7} {'ms/pair':>8}"
    ]
    for c, v in plain.items():
        if not v["true_chars"]:  # only falsely predicted characters can count here
            lines.append(
                f"{c:28} {v['pairs']:6}   nothing to find: {v['predicted_chars']} characters"
                " predicted"
            )
            continue
        pan = " ".join(
            "      -" if v.get(k) is None else f"{v[k]:7.3f}"
            for k in ("pan_precision", "pan_recall", "granularity", "plagdet")
        )
        ms = "       -" if v.get("ms_per_pair") is None else f"{v['ms_per_pair']:8.1f}"
        lines.append(
            f"{c:28} {v['pairs']:6} {v['precision']:7.3f} {v['recall']:7.3f} {v['f1']:7.3f} |"
            f" {pan} {ms}"
        )
    _emit({"method": method, "groups": plain}, as_json, "\n".join(lines))


@eval_group.command("stream")
@click.argument("labels", type=_FILE)
@_docs_option("JSON Lines articles with id, text and date (.gz allowed), ingested in date order.")
@_id_fields_option("id1,id2", "the pair's articles")
@click.option(
    "--label-field",
    default="label",
    show_default=True,
    help="The field holding the label: duplicate, partial, similar (or related), unrelated.",
)
@_json_option()
def stream_cmd(labels: Path, docs: Path, id_fields: str, label_field: str, as_json: bool) -> None:
    """How the news stream's verdicts on labelled pairs LABELS compare with the labels and
    with the rule judging each pair directly."""
    from neardup.evaluation.pairs import read_jsonl, read_pairs
    from neardup.evaluation.stream import evaluate_stream

    labelled = read_pairs(labels, _id_fields(id_fields), label_field, ("duplicate",))
    wanted = labelled.ids()
    articles = [d for d in read_jsonl(docs) if str(d.get("id")) in wanted]
    result = evaluate_stream(
        articles, labelled.pairs, [str(r[label_field]) for r in labelled.records]
    )
    lines = [
        f"{result['pairs']} labelled pairs",
        f"{'verdict':10} {'stream P/R/F1':>24} {'rule P/R/F1':>24}",
    ]
    for cls in ("duplicate", "partial", "similar"):
        s, r = result["stream"][cls], result["rule"][cls]
        lines.append(
            f"{cls:10} {_fmt(s['precision'])}/{_fmt(s['recall'])}/{_fmt(s['f1'])}"
            f"    {_fmt(r['precision'])}/{_fmt(r['recall'])}/{_fmt(r['f1'])}"
        )
    g = result["same_group"]
    lines.append(
        f"duplicate as same group: {_fmt(g['precision'])}/{_fmt(g['recall'])}/{_fmt(g['f1'])}"
    )
    lines.append(f"stream agrees with the rule on {_fmt(result['agreement_with_rule'])} of pairs")
    _emit(result, as_json, "\n".join(lines))
