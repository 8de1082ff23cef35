"""A :class:`~neardup.detect.story.StoryDesk`'s state as ``(meta, arrays)`` and back
(exactly: the story index, the document frequencies, the articles kept for events and the
events), its file in a folder, and a canonical snapshot for replay and consistency checks."""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from neardup.detect.story.config import StoryConfig
from neardup.detect.story.records import KeptArticle, StoryEvent
from neardup.errors import StoreError
from neardup.index._common import read_index_file, write_index_file
from neardup.index.docfreq import DocumentFrequencies
from neardup.index.story import StoryIndex
from neardup.rule import RuleConfig

if TYPE_CHECKING:
    from neardup.detect.story.desk import StoryDesk

__all__ = ["desk_snapshot", "desk_state", "load_desk", "restore_desk", "save_desk"]

_STATE_MAGIC = b"NDSTYDSK"
_FILE = "story.state"


def desk_state(desk: StoryDesk) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
    """``(meta, arrays)`` that :func:`restore_desk` restores exactly."""
    index_meta, index_arrays = desk.index.state()
    keys = list(desk._meta)
    metas = [desk._meta[k] for k in keys]
    words = desk.config.vector.words
    meta: dict[str, Any] = {
        "config": desk.config.scheme_id,
        "index": index_meta,
        "keys": keys,
        "names": [m.name for m in metas],
        "sources": [m.source for m in metas],
        "titles": [m.title for m in metas],
        "events": [
            {"id": e.id, "opened_by": e.opened_by, "at": e.opened_at_us, "members": e.members}
            for e in desk.events()
        ],
        "alias": desk._alias,
        "newest": desk._newest,
        "horizon": [k for _, k in desk._horizon],
    }
    arrays: dict[str, npt.NDArray[Any]] = {
        **{f"index_{k}": v for k, v in index_arrays.items()},
        **{f"df_{k}": v for k, v in desk.frequencies.state().items()},
        "dates": np.array([m.date_us for m in metas], dtype=np.int64),
        "fingerprints": np.array([m.fingerprint for m in metas], dtype=np.uint64).reshape(
            -1, words
        ),
        "values": np.array([m.values for m in metas], dtype=np.float32).reshape(
            -1, desk.config.vector.bits
        ),
    }
    return meta, arrays


def restore_desk(
    desk: StoryDesk, meta: dict[str, Any], arrays: dict[str, npt.NDArray[Any]], where: str
) -> StoryDesk:
    """Fill a new, empty ``desk`` with what :func:`desk_state` described; ``StoreError``
    when it is damaged or was made with another config."""
    if meta.get("config") != desk.config.scheme_id:
        raise StoreError(f"{where}: saved with another story config")
    try:
        index_arrays = {k[6:]: v for k, v in arrays.items() if k.startswith("index_")}
        desk.index = StoryIndex.from_state(meta["index"], index_arrays, where)
        desk.frequencies = DocumentFrequencies.from_state(
            {k[3:]: v for k, v in arrays.items() if k.startswith("df_")}
        )
        for n, k in enumerate(meta["keys"]):
            desk._meta[k] = KeptArticle(
                meta["names"][n],
                int(arrays["dates"][n]),
                meta["sources"][n],
                meta["titles"][n],
                arrays["fingerprints"][n].copy(),
                arrays["values"][n].copy(),
            )
        for e in meta["events"]:
            desk._events[e["id"]] = StoryEvent(e["id"], e["opened_by"], int(e["at"]), [])
            desk._centroid[e["id"]] = np.zeros(desk.config.vector.bits, dtype=np.float64)
            desk._last[e["id"]] = int(e["at"])
            for m in e["members"]:
                desk.set_member(m, e["id"])
        desk._alias = dict(meta["alias"])
        desk._newest = int(meta["newest"])
        desk._horizon = collections.deque((desk._meta[k].date_us, k) for k in meta["horizon"])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise StoreError(f"{where}: malformed story state: {exc}") from exc
    return desk


def save_desk(desk: StoryDesk, directory: str | os.PathLike[str]) -> None:
    """Write :func:`desk_state` to ``directory/story.state`` (created if needed; replaced
    atomically)."""
    folder = Path(directory)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create {folder}: {exc}") from exc
    meta, arrays = desk_state(desk)
    write_index_file(folder / _FILE, _STATE_MAGIC, meta, arrays)


def load_desk(
    desk_type: type[StoryDesk],
    directory: str | os.PathLike[str],
    config: StoryConfig | None = None,
    rule: RuleConfig | None = None,
) -> StoryDesk:
    """Read what :func:`save_desk` wrote; ``StoreError`` if it is missing, damaged, or was
    made with another config."""
    path = Path(directory) / _FILE
    meta, arrays = read_index_file(path, _STATE_MAGIC)
    return restore_desk(desk_type(config, rule), meta, arrays, str(path))


def desk_snapshot(desk: StoryDesk) -> str:
    """A canonical JSON rendering of the events, the indexed stories and the document
    frequencies."""
    counts = desk.frequencies.counts
    return json.dumps(
        {
            "events": [[e.id, e.opened_at_us, sorted(e.members)] for e in desk.events()],
            "alias": sorted(desk._alias.items()),
            "stories": desk.index.snapshot(),
            "kept": sorted(desk._meta),
            "df": [
                desk.frequencies.num_docs,
                int(counts.sum()),
                int(np.flatnonzero(counts).sum()),
            ],
        },
        sort_keys=True,
    )
