"""The one mixing primitive: splitmix64, the same on a scalar, an array and in a kernel."""

from __future__ import annotations

import numba
import numpy as np

from neardup._mix import GOLDEN, splitmix64
from neardup.shingles import mix64


def test_splitmix64_golden_value() -> None:
    # The first output of Vigna's reference splitmix64 generator seeded with 0 (state + GOLDEN).
    assert int(splitmix64(np.array([GOLDEN]))[0]) == 0xE220A8397B1DCDAF


def test_scalar_array_and_compiled_forms_agree() -> None:
    values = np.random.default_rng(3).integers(0, 2**63, 1000, dtype=np.uint64) * np.uint64(3)
    compiled = numba.njit(splitmix64)
    expected = mix64(values)
    assert np.array_equal(splitmix64(values), expected)
    assert [int(compiled(v)) for v in values[:50]] == [int(x) for x in expected[:50]]
    assert len(set(expected.tolist())) == len(values)  # a bijection: no collisions
