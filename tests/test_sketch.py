"""Every signature scheme: golden bytes, byte round-trip, scheme checks, determinism, bad input."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xxhash

from neardup.errors import ConfigError, InputTypeError, SchemeMismatchError
from neardup.sketch import (
    SCHEMES,
    IdfTable,
    MinHashConfig,
    ShingleSetConfig,
    Signature,
    SimHashConfig,
    SpotSigsConfig,
    build_idf_table,
    estimate_jaccard,
    hamming_distance,
    make_config,
    sign,
)
from neardup.text import TextConfig

GOLD = (
    "The Bank of England said on Monday it had provided 250 mln stg of assistance "
    "to the money market. Mr. J. Smith, a U.S. trader, said rates fell 0.5 pct. "
    "Analysts expect the central bank to cut its 11 pct base rate is likely soon."
)
CORPUS = [
    GOLD,
    "The bank said the money market shortage was 250 mln stg.",
    "Money market rates fell as the bank cut its base rate.",
    "Analysts said the central bank rate cut was likely, a trader said.",
    "Oil prices rose on Tuesday as OPEC said output was cut.",
    "The dollar fell against the yen in Tokyo trading on Monday.",
]
GOLDEN_IDF_DIGEST = "8bbfd8466474b6b0"

# (scheme, params, uses the IDF table, scheme id, length, xxh64 of the bytes, first values):
# computed once and written here, so any change in the bytes a scheme produces is caught.
GOLDEN: list[tuple[str, dict[str, Any], bool, str, int, str, list[int]]] = [
    ("sentences", {"k": 16}, False, "sentences/v1:96db43b7e34f326f", 3, "d322059496229e98",
     [1017941597, 1059263999]),
    ("shingles", {"width": 4}, False, "shingles/v1:a76ea08e478b9448", 43, "ab6280c2e776f272",
     [61841544977576805, 447485729199554254]),
    ("spotsigs", {}, False, "spotsigs/v1:43cd50112cc2d626", 5, "e1ed2c95688a9e43",
     [5804752474469315102, 7557654504761966105]),
    ("minhash", {"method": "oph", "num_perm": 128}, False, "minhash/v1:6e31e2044130c8eb", 128,
     "50cd14c3c5097dd6", [6368711865755233457, 194272768746220843]),
    ("minhash", {"method": "permutations"}, False, "minhash/v1:8927c4864665afcd", 128,
     "45f8d7ed14a7d395", [547327211087262712, 67929406936786417]),
    ("simhash", {"bits": 64}, False, "simhash/v1:4f5b7f1750ba36d1", 1, "56252b6167a0f101",
     [9926901548367200224]),
    ("simhash", {"bits": 128}, False, "simhash/v1:49cabfa9df02db64", 2, "f68153713e270245",
     [3528185423215715684, 9926901548367200224]),
    ("simhash", {}, True, "simhash/v1:3e06696f940be981", 1, "a7966dd238809985",
     [9926901548366149440]),
    ("simhash", {"bits": 128}, True, "simhash/v1:9eef797f19a75dbe", 2, "7899813538866612",
     [3527059540487693764, 9926901548366149440]),
]  # fmt: skip


@pytest.fixture(scope="module")
def idf_table() -> IdfTable:
    return build_idf_table(CORPUS)


def test_registry_has_every_scheme() -> None:
    assert set(SCHEMES) >= {"sentences", "shingles", "spotsigs", "minhash", "simhash"}


def test_golden_idf_table(idf_table: IdfTable) -> None:
    assert idf_table.digest == GOLDEN_IDF_DIGEST
    assert len(idf_table) == 39


@pytest.mark.parametrize(
    "case", GOLDEN, ids=lambda c: f"{c[0]}-{c[1]}-{'idf' if c[2] else 'noidf'}"
)
def test_golden_signatures(case: tuple[Any, ...], idf_table: IdfTable) -> None:
    scheme, params, with_idf, scheme_id, length, digest, first = case
    if with_idf:
        params = {**params, "idf": idf_table}
    sig = sign(GOLD, scheme, **params)
    assert sig.scheme_id == scheme_id
    assert len(sig) == length
    assert sig.values[: len(first)].tolist() == first
    assert xxhash.xxh64_hexdigest(sig.to_bytes()) == digest


def all_configs(idf: IdfTable) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("sentences", {}),
        ("shingles", {}),
        ("shingles", {"width": 1}),
        ("spotsigs", {}),
        ("spotsigs", {"chain_length": 1, "spot_distance": 2}),
        ("minhash", {}),
        ("minhash", {"method": "permutations", "num_perm": 64}),
        ("minhash", {"spotsigs": SpotSigsConfig()}),
        ("simhash", {}),
        ("simhash", {"bits": 128, "idf": idf}),
    ]


@pytest.mark.parametrize("text", [GOLD, "", "   ", "one", "\ud800\x00 garbage \x07"])
def test_byte_round_trip_every_scheme(text: str, idf_table: IdfTable) -> None:
    for scheme, params in all_configs(idf_table):
        sig = sign(text, scheme, **params)
        back = Signature.from_bytes(sig.to_bytes())
        assert back == sig
        assert back.scheme_id == sig.scheme_id
        assert np.array_equal(back.values, sig.values)
        assert back.values.dtype == sig.values.dtype


def test_signature_shapes_and_dtypes(idf_table: IdfTable) -> None:
    assert sign(GOLD, "minhash", num_perm=200).values.shape == (200,)
    assert sign(GOLD, "minhash").values.dtype == np.uint64
    assert sign(GOLD, "simhash").values.shape == (1,)
    assert sign(GOLD, "simhash", bits=128).values.shape == (2,)
    for scheme in ("shingles", "spotsigs"):
        v = sign(GOLD, scheme).values
        assert v.dtype == np.uint64
        assert np.all(v[1:] > v[:-1])  # sorted, distinct


def test_simhash_128_low_word_is_the_64_bit_fingerprint() -> None:
    assert sign(GOLD, "simhash", bits=128).values[1] == sign(GOLD, "simhash").values[0]


def test_empty_and_short_text_semantics() -> None:
    for scheme in ("shingles", "spotsigs", "minhash", "simhash"):
        assert len(sign("", scheme)) == 0
        assert len(sign(" \n\t", scheme)) == 0
        assert len(sign("!!! ...", scheme)) == 0
    assert len(sign("two words", "shingles", width=4)) == 1  # fewer tokens than the width
    assert len(sign("two words", "minhash")) == 128
    empty = sign("", "minhash")
    assert estimate_jaccard(empty, sign("", "minhash")) == 1.0
    assert estimate_jaccard(empty, sign(GOLD, "minhash")) == 0.0
    assert hamming_distance(sign("", "simhash"), sign("", "simhash")) == 0
    assert hamming_distance(sign("", "simhash"), sign(GOLD, "simhash")) == 64
    assert hamming_distance(sign("", "simhash", bits=128), sign(GOLD, "simhash", bits=128)) == 128


def test_no_sentence_boundary_and_garbage() -> None:
    text = "no boundary anywhere in this little text about oil prices and rates"
    assert len(sign(text, "sentences")) == 1
    garbage = bytes(range(256)).decode("latin-1") * 20
    for scheme in ("sentences", "shingles", "spotsigs", "minhash", "simhash"):
        sign(garbage, scheme)


def test_scheme_mismatch_is_a_typed_error() -> None:
    a = sign(GOLD, "minhash")
    with pytest.raises(SchemeMismatchError):
        estimate_jaccard(a, sign(GOLD, "minhash", num_perm=64))
    with pytest.raises(SchemeMismatchError):
        estimate_jaccard(a, sign(GOLD, "minhash", seed=2))
    with pytest.raises(SchemeMismatchError):
        estimate_jaccard(a, sign(GOLD, "simhash"))
    with pytest.raises(SchemeMismatchError):
        hamming_distance(sign(GOLD, "simhash"), sign(GOLD, "simhash", bits=128))
    with pytest.raises(SchemeMismatchError):
        hamming_distance(sign(GOLD, "simhash"), a)


def test_different_idf_tables_are_different_schemes(idf_table: IdfTable) -> None:
    other = build_idf_table(CORPUS[:3])
    assert other.digest != idf_table.digest
    with pytest.raises(SchemeMismatchError):
        hamming_distance(sign(GOLD, "simhash", idf=idf_table), sign(GOLD, "simhash", idf=other))
    with pytest.raises(SchemeMismatchError):
        hamming_distance(sign(GOLD, "simhash", idf=idf_table), sign(GOLD, "simhash"))


def test_sign_errors() -> None:
    with pytest.raises(ConfigError, match="unknown scheme"):
        sign(GOLD, "nosuch")
    with pytest.raises(ConfigError):
        sign(GOLD, "minhash", k=3)
    with pytest.raises(ConfigError):
        sign(GOLD, "minhash", num_perm=0)
    with pytest.raises(ConfigError):
        sign(GOLD, "minhash", method="fast")
    with pytest.raises(ConfigError):
        sign(GOLD, "simhash", bits=32)
    with pytest.raises(ConfigError):
        sign(GOLD, "shingles", width=0)
    with pytest.raises(ConfigError):
        sign(GOLD, "spotsigs", chain_length=0)
    with pytest.raises(ConfigError):
        sign(GOLD, "spotsigs", antecedents=frozenset())
    with pytest.raises(ConfigError):
        sign(GOLD, "spotsigs", text=TextConfig(drop_stop_words=True))
    with pytest.raises(ConfigError):
        sign(GOLD, "minhash", config=ShingleSetConfig())
    with pytest.raises(InputTypeError):
        sign(b"bytes", "minhash")  # type: ignore[arg-type]


def test_config_objects_and_lists_are_accepted() -> None:
    assert sign(GOLD, "minhash", config=MinHashConfig()) == sign(GOLD, "minhash")
    by_list = sign(GOLD, "spotsigs", antecedents=["the", "a"])
    assert by_list == sign(GOLD, "spotsigs", antecedents=frozenset({"a", "the"}))
    assert make_config("minhash", num_perm=64).num_perm == 64  # type: ignore[attr-defined]


def test_idf_table_must_match_text_config(idf_table: IdfTable) -> None:
    with pytest.raises(ConfigError, match="IDF table"):
        SimHashConfig(idf=idf_table, width=2)
    with pytest.raises(ConfigError, match="IDF table"):
        SimHashConfig(idf=idf_table, text=TextConfig())


def test_idf_table_file_round_trip(tmp_path: Path, idf_table: IdfTable) -> None:
    path = tmp_path / "reuters.idf"
    idf_table.save(path)
    loaded = IdfTable.load(path)
    assert loaded == idf_table
    assert loaded.digest == idf_table.digest
    assert loaded.text == idf_table.text
    assert sign(GOLD, "simhash", idf=loaded) == sign(GOLD, "simhash", idf=idf_table)
    # The documented header.
    data = path.read_bytes()
    assert data[:4] == b"NDIF" and data[4] == 1
    assert int.from_bytes(data[8:16], "little") == len(CORPUS)


def test_idf_table_bad_files(tmp_path: Path, idf_table: IdfTable) -> None:
    from neardup.errors import InputError, StoreError

    data = idf_table.to_bytes()
    for bad in (b"", b"XXXX" + data[4:], data[:-3], data[:4] + b"\x09" + data[5:]):
        with pytest.raises(InputError):
            IdfTable.from_bytes(bad)
    with pytest.raises(StoreError):
        IdfTable.load(tmp_path / "missing.idf")


def test_idf_table_is_order_independent_and_weights_rare_terms_higher() -> None:
    a = build_idf_table(CORPUS)
    b = build_idf_table(list(reversed(CORPUS)))
    assert a == b
    from neardup.sketch.idf import feature_hashes

    common, rare = (feature_hashes(w, a.text, 1) for w in ("bank", "opec"))
    assert a.weights_of(rare)[0] > a.weights_of(common)[0]
    unknown = feature_hashes("zzyzx", a.text, 1)
    assert a.weights_of(unknown)[0] == a.default_weight


def test_determinism_across_processes(tmp_path: Path) -> None:
    """Signing in a subprocess with another PYTHONHASHSEED gives identical bytes."""
    script = textwrap.dedent(
        f"""
        import sys
        from neardup.sketch import sign, build_idf_table
        gold = {GOLD!r}
        corpus = {CORPUS!r}
        idf = build_idf_table(corpus)
        out = b"".join(
            sign(gold, scheme, **params).to_bytes()
            for scheme, params in [
                ("sentences", {{}}), ("shingles", {{}}), ("spotsigs", {{}}),
                ("minhash", {{}}), ("minhash", {{"method": "permutations"}}),
                ("simhash", {{}}), ("simhash", {{"bits": 128, "idf": idf}}),
            ]
        )
        sys.stdout.buffer.write(out)
        """
    )
    outputs = []
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, env=env, check=True, timeout=120
        )
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
    idf = build_idf_table(CORPUS)
    here = b"".join(
        sign(GOLD, scheme, **params).to_bytes()
        for scheme, params in [
            ("sentences", {}), ("shingles", {}), ("spotsigs", {}),
            ("minhash", {}), ("minhash", {"method": "permutations"}),
            ("simhash", {}), ("simhash", {"bits": 128, "idf": idf}),
        ]
    )  # fmt: skip
    assert outputs[0] == here


def test_exact_duplicates_in_reuters_sign_identically(reuters_docs: list[dict[str, Any]]) -> None:
    from conftest import data_path, read_jsonl_gz

    by_id = {d["id"]: d["text"] for d in reuters_docs}
    groups = [
        g["ids"]
        for g in read_jsonl_gz(data_path("reuters21578", "labels_derived_exact_dups.jsonl.gz"))
    ]
    checked = 0
    for ids in groups:
        texts = [by_id[i] for i in ids if i in by_id]
        if len(texts) < 2:
            continue
        for scheme in ("shingles", "minhash", "simhash"):
            assert sign(texts[0], scheme) == sign(texts[1], scheme)
        checked += 1
    assert checked >= 10


def test_scheme_keyword_and_text_parameter() -> None:
    assert sign(GOLD, scheme="minhash") == sign(GOLD, "minhash")
    cfg = TextConfig(stem=False)
    assert sign(GOLD, "shingles", text=cfg) == sign(
        GOLD, "shingles", config=ShingleSetConfig(text=cfg)
    )
    with pytest.raises(ConfigError, match="unknown scheme"):
        sign(GOLD, "nosuch", config=MinHashConfig())


def test_ten_megabyte_text_every_scheme() -> None:
    """10 MB of text signs in seconds, with bounded output sizes."""
    unit = "The central bank cut its 11.5 pct rate. Mr. Smith said markets rallied! "
    text = unit * (10_000_000 // len(unit))
    assert len(sign(text, "minhash")) == 128
    assert len(sign(text, "minhash", method="oph")) == 128
    assert len(sign(text, "simhash", bits=128)) == 2
    assert len(sign(text, "shingles")) == 13  # the repeated unit has 13 distinct 4-shingles
    assert len(sign(text, "spotsigs")) >= 1
    # Non-ASCII text takes the general path and gives the same kind of result.
    assert len(sign(text + " café", "minhash")) == 128
