"""The near-duplicate judgement (neardup.rule): features against plain-Python oracles,
page-furniture cues, the verdict's definitions and its symmetry."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import InputTypeError, SchemeMismatchError, SignatureFormatError
from neardup.rule import Profile, RuleConfig, judge, pair_features, profile, shared_passages
from neardup.rule._kernels import direction_numpy, merge_count_numpy, weighted_dot_numpy
from neardup.rule.features import Direction, direction_reference, features_reference
from neardup.rule.junk import FURNITURE, QUOTED, paragraph_spans, token_flags
from neardup.sketch.shingleset import sign_shingles

STORY = [
    "The central bank raised its main interest rate by half a point on Tuesday, the first "
    "increase in three years, citing a sharp rise in consumer prices over the winter.",
    "Officials said the decision was unanimous and that further increases could follow if "
    "inflation failed to slow in the coming months, according to a statement.",
    "Economists had expected a smaller move, and markets reacted with a brief fall in share "
    "prices before recovering in the afternoon as traders digested the news.",
    "The bank also cut its forecast for economic growth this year, pointing to weaker exports "
    "and a slowdown in construction that began in the autumn of last year.",
    "Business groups warned that higher borrowing costs would hurt small companies, while "
    "consumer advocates welcomed the move as overdue given the price rises.",
]
OTHER = [
    "A storm swept across the northern coast overnight, bringing down power lines and "
    "flooding several villages where residents were moved to schools and sports halls.",
    "Rescue teams worked through the night, and the regional government promised help for "
    "farmers whose fields were under water for the second time this decade.",
    "Forecasters said the rain would ease by the weekend but warned that rivers could keep "
    "rising for days as water flowed down from the hills into the valleys below.",
]


def text(*paras: str) -> str:
    return "\n\n".join(paras)


# --- page furniture ------------------------------------------------------------------------


def test_paragraphs_of_a_web_page_are_its_lines() -> None:
    page = "Share story\nA first paragraph of the story.\n\nA second one.\nMost Read"
    spans = paragraph_spans(page)
    assert [page[s:e] for s, e in spans] == [
        "Share story",
        "A first paragraph of the story.",
        "A second one.",
        "Most Read",
    ]


def test_hard_wrapped_newswire_paragraphs_are_joined() -> None:
    wire = (
        "The company said on Tuesday that\nits profits rose in the third quarter\n"
        "as sales of new products grew.\n    Analysts said the results were\n"
        "better than expected."
    )
    spans = paragraph_spans(wire)
    assert len(spans) == 2
    assert wire[spans[0][0] : spans[0][1]].endswith("grew.")


def test_furniture_cues_mark_short_repeated_and_embedded_paragraphs() -> None:
    caption = (
        "President Smith waves from the car after arriving at the airport on Sunday on the "
        "eve of the meeting with the prime minister."
    )
    page = text(
        "Share story",
        caption,
        "(AP Photo/Some Photographer)",
        STORY[0],
        caption,
        "A reader poll shows a large majority of readers want more coverage of the economy "
        "and fewer stories about celebrities in the weekend edition.",
        "— Someone (@someone) July 16, 2018",
        STORY[1],
    )
    p = profile(page)
    cfg = RuleConfig()
    # Map tokens back to paragraphs by their offsets.
    assert p.starts is not None
    spans = paragraph_spans(page)
    furniture_paras = set()
    for start, flag in zip(p.starts.tolist(), p.flags.tolist(), strict=True):
        para = max(i for i, (s, _) in enumerate(spans) if s <= start)
        if flag & FURNITURE:
            furniture_paras.add(para)
    # short button, caption (repeated and credited), credit line, the embedded post, and
    # its attribution line are furniture; the two story paragraphs are prose.
    assert furniture_paras == {0, 1, 2, 4, 5, 6}
    assert cfg.min_paragraph_tokens == 8


def test_quoted_words_are_flagged() -> None:
    p = profile('He said "we will not back down from this fight" and left the room quickly.')
    assert p.starts is not None
    quoted = [bool(f & QUOTED) for f in p.flags.tolist()]
    assert quoted[2:10] == [True] * 8
    assert not any(quoted[:2]) and not any(quoted[10:])


def _quoted_by_character(text: str, starts: list[int]) -> list[bool]:
    """Brute force: walk each paragraph's characters, marking every character from an
    opening mark to its closing one (curly and guillemet marks open or close; a straight
    quote does either), then read each token's first character."""
    inside = [False] * (len(text) + 1)
    for s, e in paragraph_spans(text):
        open_at = None
        for i in range(s, e):
            c = text[i]
            if c in "“«„":
                open_at = i
            elif c in "”»":
                if open_at is not None:
                    inside[open_at : i + 1] = [True] * (i + 1 - open_at)
                open_at = None
            elif c == '"':
                if open_at is None:
                    open_at = i
                else:
                    inside[open_at : i + 1] = [True] * (i + 1 - open_at)
                    open_at = None
    return [inside[at] for at in starts]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='ab .,"“”«»„\n', max_size=120))
def test_quoted_flags_are_those_of_a_walk_over_the_characters(page: str) -> None:
    starts = [
        i for i, c in enumerate(page) if c.isalpha() and (i == 0 or not page[i - 1].isalpha())
    ]
    flags = token_flags(page, np.array(starts, dtype=np.int64), min_paragraph_tokens=8)
    assert [bool(f & QUOTED) for f in flags.tolist()] == _quoted_by_character(page, starts)


# --- profile ------------------------------------------------------------------------------


def test_profile_shingles_are_the_shingle_signature() -> None:
    cfg = RuleConfig()
    page = text(*STORY)
    assert np.array_equal(
        profile(page, cfg).shingle_set, sign_shingles(page, cfg.shingle_config).values
    )


def test_profile_bytes_round_trip_and_refuse_garbage() -> None:
    p = profile(text(*STORY))
    back = Profile.from_bytes(p.to_bytes(), scheme_id=p.scheme_id)
    assert back == p
    assert np.array_equal(back.shingles, p.shingles)
    with pytest.raises(SignatureFormatError):
        Profile.from_bytes(b"not a profile")
    with pytest.raises(SignatureFormatError):
        Profile.from_bytes(p.to_bytes()[:-3])
    with pytest.raises(SchemeMismatchError):
        Profile.from_bytes(p.to_bytes(), scheme_id="profile/v1:0000")


def test_profiles_of_other_configs_are_not_compared() -> None:
    a = profile(STORY[0])
    b = profile(STORY[0], RuleConfig(width=5))
    with pytest.raises(SchemeMismatchError):
        judge(a, b)
    with pytest.raises(InputTypeError):
        judge(STORY[0], b"bytes")  # type: ignore[arg-type]


# --- features against the oracle -----------------------------------------------------------


WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "tau"]


@st.composite
def texts(draw: st.DrawFn) -> str:
    paras = draw(
        st.lists(
            st.lists(st.sampled_from([*WORDS, '"quoted', 'words"', "(Photo/x)"]), max_size=14),
            max_size=6,
        )
    )
    return "\n".join(" ".join(p) for p in paras)


@settings(max_examples=150, deadline=None)
@given(texts(), texts(), st.integers(1, 5))
def test_compiled_features_equal_the_reference(a: str, b: str, width: int) -> None:
    cfg = RuleConfig(width=width)
    pa, pb = profile(a, cfg), profile(b, cfg)
    assert pair_features(pa, pb, width) == features_reference(pa, pb, width)


@settings(max_examples=100, deadline=None)
@given(texts(), texts())
def test_verdict_is_symmetric(a: str, b: str) -> None:
    ab, ba = judge(a, b), judge(b, a)
    assert ab.label == ba.label
    assert ab.score == pytest.approx(ba.score)


@settings(max_examples=150, deadline=None)
@given(texts(), texts(), st.integers(1, 5))
def test_numpy_features_equal_the_reference(a: str, b: str, width: int) -> None:
    """The numpy twins of the compiled kernels (small jobs run them without numba)."""
    cfg = RuleConfig(width=width)
    pa, pb = profile(a, cfg), profile(b, cfg)
    expected = features_reference(pa, pb, width)
    got = direction_numpy(pa.shingles, pa.flags, pb.shingle_set, width)
    assert Direction(*got) == expected.a
    got = direction_numpy(pb.shingles, pb.flags, pa.shingle_set, width)
    assert Direction(*got) == expected.b
    assert merge_count_numpy(pa.shingle_set, pb.shingle_set) == expected.shared_shingles
    ta = dict(zip(pa.terms.tolist(), pa.term_counts.tolist(), strict=True))
    tb = dict(zip(pb.terms.tolist(), pb.term_counts.tolist(), strict=True))
    dot = weighted_dot_numpy(pa.terms, pa.term_counts, pb.terms, pb.term_counts)
    assert dot == sum(v * tb[k] for k, v in ta.items() if k in tb)


_WORDS = st.integers(0, 2**64 - 1) | st.sampled_from([0, 1, 2**63, 2**64 - 1])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_WORDS, max_size=60, unique=True),
    st.lists(_WORDS, max_size=60, unique=True),
    st.lists(_WORDS, max_size=300),
    st.integers(1, 6),
)
def test_compiled_primitives_equal_python_sets(
    a: list[int], b: list[int], x: list[int], width: int
) -> None:
    # The branch-free merges, the hash table and both lookups of direction() (table and
    # binary search) against Python's sets.
    from neardup.rule import _kernels as k

    sa = np.array(sorted(a), dtype=np.uint64)
    sb = np.array(sorted(b), dtype=np.uint64)
    assert k.merge_count_sorted(sa, sb) == len(set(a) & set(b))
    wa = np.arange(1, sa.shape[0] + 1, dtype=np.uint32)
    wb = np.arange(3, sb.shape[0] + 3, dtype=np.uint32)
    weight_b = dict(zip(sorted(b), wb.tolist(), strict=True))
    expected_dot = sum(
        w * weight_b[v] for v, w in zip(sorted(a), wa.tolist(), strict=True) if v in weight_b
    )
    assert k.weighted_dot(sa, wa, sb, wb) == expected_dot
    marks = np.ones(sa.shape[0], dtype=np.bool_)
    assert k._shared_marks(sa, sb, marks) == len(set(a) & set(b))
    assert marks.tolist() == [v in set(b) for v in sorted(a)]
    keys, at, shift = k.probe_table(sb)
    for v in [*sorted(a), *sorted(b)]:
        j = k.index_in(keys, at, shift, np.uint64(v))
        assert (j >= 0) == (v in set(b)) and (j < 0 or int(sb[j]) == v)
    xs = np.array(x, dtype=np.uint64)
    flags = np.zeros(xs.shape[0] + width - 1, dtype=np.uint8)
    # y's set small (table) and large (binary search) against the same x
    for y in (sb, np.unique(np.concatenate([sb, np.arange(9 * xs.shape[0] + 1, dtype=np.uint64)]))):
        assert k.direction(xs, flags, y, width) == direction_numpy(xs, flags, y, width)


def test_direction_reference_counts_by_hand() -> None:
    # Five tokens, width 2: shingles (t0 t1) (t1 t2) (t2 t3) (t3 t4); the second text holds
    # the first two, so tokens t0..t2 are found and the run is 3.
    cfg = RuleConfig(width=2, min_paragraph_tokens=0)
    x = profile("alpha beta gamma delta omega", cfg)
    y = profile("alpha beta gamma", cfg)
    d = direction_reference(x, y, 2)
    assert (d.found_prose, d.prose, d.found_tokens, d.tokens, d.passage) == (3, 5, 3, 5, 3)


# --- verdicts ------------------------------------------------------------------------------


def test_identical_texts_are_duplicates() -> None:
    v = judge(text(*STORY), text(*STORY))
    assert v.label == "duplicate" and v.score == 1.0


def test_a_copy_in_other_page_furniture_is_a_duplicate() -> None:
    page = text("Share story", "Subscribe now", *STORY, "Most Read", "Comments")
    v = judge(text(*STORY), page)
    assert v.label == "duplicate"
    assert v.features.coverage_a == 1.0 and v.features.coverage_b == 1.0


def test_truncation_is_a_duplicate_while_most_is_kept_then_partial() -> None:
    assert judge(text(*STORY), text(*STORY[:3])).label == "duplicate"
    assert judge(text(*STORY, *OTHER), text(STORY[0])).label == "partial"


def test_an_excerpt_inside_another_report_is_partial_with_its_spans() -> None:
    a = text(*STORY)
    b = text(*OTHER, STORY[2], STORY[3])
    v = judge(a, b, explain=True)
    assert v.label == "partial"
    assert v.passages
    longest = max(v.passages, key=lambda p: p.tokens)
    assert a[longest.a_start : longest.a_end] == b[longest.b_start : longest.b_end]
    assert STORY[2] in a[longest.a_start : longest.a_end]


def test_shared_quotes_are_not_copying() -> None:
    quote = (
        '"We will not accept any agreement that leaves our farmers worse off than they were '
        'before the negotiations started last year," the minister said.'
    )
    a = text(STORY[0], quote, STORY[1])
    b = text(OTHER[0], quote, OTHER[1])
    v = judge(a, b)
    assert v.label != "partial" and v.features.passage < RuleConfig().partial_min_passage


def test_other_stories_are_unrelated() -> None:
    assert judge(text(*STORY), text(*OTHER)).label == "unrelated"


def test_clauses_report_their_margins() -> None:
    v = judge(text(*STORY), text(*STORY[:3]))
    names = [c.name for c in v.clauses]
    assert names == ["coverage", "coverage_other", "passage", "cosine"]
    for c in v.clauses:
        assert c.margin == pytest.approx(c.value - c.threshold)
        assert c.held == (c.value >= c.threshold)


def test_shared_passages_need_offsets() -> None:
    p = profile(text(*STORY))
    stored = Profile.from_bytes(p.to_bytes())
    with pytest.raises(ValueError):
        shared_passages(stored, p, 4)


@pytest.mark.parametrize("bad", ["", "   \n\n  ", "!!! ---", "\u0000\u0000"])
def test_empty_or_wordless_texts_have_a_defined_verdict(bad: str) -> None:
    v = judge(bad, text(*STORY))
    assert v.label == "unrelated"
    assert v.features.coverage_a == 0.0
    assert judge(bad, bad).label == "unrelated"


# --- bounds: the screen's early-outs are bounds of the rule ---------------------------------


@settings(max_examples=150, deadline=None)
@given(texts(), texts(), st.integers(1, 5), st.integers(1, 40))
def test_copy_bounds_bound_the_exact_features(a: str, b: str, width: int, passage: int) -> None:
    from neardup.rule import decide
    from neardup.rule.bounds import screen

    cfg = RuleConfig(width=width, partial_min_passage=passage, duplicate_min_coverage_other=0.2)
    pa, pb = profile(a, cfg), profile(b, cfg)
    f = pair_features(pa, pb, width)
    s = screen(pa, [pb], cfg)
    assert int(s.shared[0]) == f.shared_shingles
    assert s.cosine[0] == f.cosine
    label = decide(f, cfg)[0]
    if not s.copy_possible[0]:
        assert label in ("similar", "unrelated")
        assert label == ("similar" if f.cosine >= cfg.similar_min_cosine else "unrelated")


@pytest.mark.slow
def test_a_ten_megabyte_text_gets_a_verdict() -> None:
    big = text(*STORY) * 20_000  # about 10 MB
    assert len(big) > 9_000_000
    v = judge(big, text(*STORY))
    assert v.label == "duplicate" and v.features.coverage_b == 1.0
