"""Steps 4-5 of the aligner: passages from clusters, their boundaries (where copying starts
and ends inside the edge sentences) and the filtering of overlapping passages."""

from __future__ import annotations

from neardup.similarity.alignment.model import _PairModel
from neardup.similarity.alignment.records import AlignedPassage, AlignmentConfig, PreparedText


def _filter(
    model: _PairModel,
    clusters: list[tuple[tuple[int, int], tuple[int, int], float]],
    cfg: AlignmentConfig,
) -> list[AlignedPassage]:
    ngram = (cfg.boundary_ngram, cfg.boundary_ngram_low, cfg.verbatim_share)
    window = (cfg.boundary_window, cfg.boundary_density, cfg.trim_whole_units)
    passages = [_passage(model, *c, ngram, window) for c in clusters]
    kept: list[AlignedPassage] = []
    for p in sorted(passages, key=lambda p: (p.this_offset, p.this_length, p.source_offset)):
        if kept and p.this_offset < kept[-1].this_end:  # overlap on the suspicious side
            if _better(p, kept[-1]):
                kept[-1] = p
            continue
        kept.append(p)
    return [
        p
        for p in kept
        if p.this_length >= cfg.min_passage_chars and p.source_length >= cfg.min_passage_chars
    ]


def _better(a: AlignedPassage, b: AlignedPassage) -> bool:
    return (a.similarity, a.this_length, -a.this_offset) > (
        b.similarity,
        b.this_length,
        -b.this_offset,
    )


def _passage(
    model: _PairModel,
    susp_range: tuple[int, int],
    src_range: tuple[int, int],
    sim: float,
    ngram: tuple[int, int, float],
    window: tuple[int, float, bool] = (1, 0.0, False),
) -> AlignedPassage:
    n = ngram[0] if _ngram_share(model, susp_range, src_range, ngram[0]) >= ngram[2] else ngram[1]
    w, rho, anywhere = window
    a, b = _bounds(model.susp, susp_range, model.src, src_range, n, w, rho, anywhere)
    c, d = _bounds(model.src, src_range, model.susp, susp_range, n, w, rho, anywhere)
    return AlignedPassage(a, b - a, c, d - c, sim)


def _bounds(
    side: PreparedText,
    rng: tuple[int, int],
    other: PreparedText,
    other_rng: tuple[int, int],
    ngram: int,
    window: int = 1,
    density: float = 0.0,
    edge_units: bool = False,
) -> tuple[int, int]:
    """Character span of units ``rng``; with ``ngram`` > 0 its first and last unit are trimmed
    to the first / last token starting / ending a word n-gram found in the other side's span
    (copied passages rarely start and end at sentence boundaries).  A unit without such an
    n-gram is kept whole."""
    start, end = int(side.bounds[rng[0], 0]), int(side.bounds[rng[1], 1])
    if ngram <= 0:
        return start, end
    forms, starts, ends, first_len, last_from = _range_tokens(side, rng)
    o_forms = _range_tokens(other, other_rng)[0]
    shared = {tuple(o_forms[i : i + ngram]) for i in range(len(o_forms) - ngram + 1)}
    if not shared:
        return start, end
    # Only a trim that drops tokens moves a boundary, so a copy of whole sentences keeps
    # its sentence span (punctuation included).  A boundary token must start (end) a
    # window of ``window`` tokens at least ``density`` of which start (end) shared n-grams:
    # a lone common word before the copy does not pull its start out.
    hit = [tuple(forms[i : i + ngram]) in shared for i in range(len(forms) - ngram + 1)]
    reach = len(hit) if edge_units else min(first_len, len(hit))
    for i in range(reach):
        if hit[i] and sum(hit[i : i + window]) >= density * len(hit[i : i + window]):
            start = starts[i] if i > 0 else start
            break
    stop = ngram - 1 if edge_units else max(last_from, ngram - 1)
    for j in range(len(forms) - 1, stop - 1, -1):
        k = j - ngram + 1  # the n-gram ending at j starts at k
        back = hit[max(0, k - window + 1) : k + 1]
        if hit[k] and sum(back) >= density * len(back):
            end = ends[j] if j < len(forms) - 1 else end
            break
    return start, end


def _ngram_share(
    model: _PairModel, susp_range: tuple[int, int], src_range: tuple[int, int], n: int
) -> float:
    """Share of the suspicious span's word n-grams found in the source span: near 1 for a
    verbatim copy, low once words are shuffled or replaced."""
    if n <= 0:
        return 1.0
    a = _range_tokens(model.susp, susp_range)[0]
    b = _range_tokens(model.src, src_range)[0]
    grams = [tuple(a[i : i + n]) for i in range(len(a) - n + 1)]
    if not grams:
        return 0.0
    other = {tuple(b[i : i + n]) for i in range(len(b) - n + 1)}
    return sum(g in other for g in grams) / len(grams)


def _range_tokens(
    side: PreparedText, rng: tuple[int, int]
) -> tuple[list[int], list[int], list[int], int, int]:
    """Tokens of units ``rng`` concatenated, the first unit's token count and the index where
    the last unit's tokens begin."""
    a, b = int(side.ptr[rng[0]]), int(side.ptr[rng[1] + 1])
    first_len = int(side.ptr[rng[0] + 1]) - a
    last_from = int(side.ptr[rng[1]]) - a
    return (
        side.forms[a:b].tolist(),
        side.starts[a:b].tolist(),
        side.ends[a:b].tolist(),
        first_len,
        last_from,
    )
