"""Saving and reading origin-detection state: the one state-file mechanism of neardup.

The detector's :meth:`save` / :meth:`load` and the store follower's checkpoint go through
:func:`save_state` / :func:`load_state`, which are :mod:`neardup.store.checkpoint`'s state
files (kind ``"origin-state"``): written atomically under a temporary name unique to the
process and call, fsynced, renamed over the target; read back only when intact (length and
an xxh3-128 digest of everything), so a missing, empty, truncated or foreign file or a
flipped byte raises :class:`~neardup.errors.StateFileError` (a ``StoreError``) whose
message says what is wrong.  Nothing is unpickled.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from neardup.errors import StateFileError
from neardup.store.checkpoint import read_state, write_state

__all__ = ["KIND", "load_state", "save_state"]

KIND = "origin-state"


def save_state(path: str | os.PathLike[str], arrays: dict[str, Any]) -> None:
    """Write ``arrays`` (name -> numpy array) to ``path`` atomically."""
    write_state(path, KIND, {}, {k: np.asarray(v) for k, v in arrays.items()})


def load_state(path: str | os.PathLike[str]) -> dict[str, np.ndarray[Any, Any]]:
    """The arrays saved at ``path``; ``StateFileError`` when missing or damaged."""
    saved = read_state(path, KIND)
    if saved is None:
        raise StateFileError(f"origin state file {path} does not exist")
    return dict(saved.arrays)
