"""Labelled pairs and clusterings: reading them, and evaluating a method on them.

Formats (JSON Lines, optionally gzip-compressed, decided by the ``.gz`` suffix):

* documents: one object per line with ``id`` and ``text`` (field names configurable);
* pair labels: one object per line with two ids (``id1``/``id2`` by default) and a label
  (``label`` by default).  A label is positive when it is ``true``, ``1``, or a string in
  ``positive`` (default ``{"duplicate"}``); ``false``, ``0`` and any other string are
  negative.  Other fields (``edit``, ``strength``, ...) are kept for per-group reports;
* clusterings: either objects with an id and a cluster field (``group``, ``cluster``,
  ``duplicate_of``, ``original`` or ``canonical``, tried in that order, or the field named
  by ``cluster_field``; a ``null`` cluster means "its own cluster"), or objects listing a
  whole group as ``ids`` (the ``labels_derived_exact_dups`` format).  Nested ``synth``
  objects (the :mod:`neardup.evaluation.synth` output) are read too.  Ids that a clustering
  does not mention are singletons; chains (a duplicate of a duplicate) are followed.

Errors: a malformed line raises ``InputError`` naming the file and line number.
"""

from __future__ import annotations

import dataclasses
import gzip
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from neardup.batch.io import parse_json_line
from neardup.errors import InputError, NotFoundError, StoreError
from neardup.evaluation.methods import Method, score_pairs
from neardup.evaluation.metrics import (
    adjusted_rand_index,
    average_precision,
    bcubed,
    precision_recall_f1,
    roc_auc,
    threshold_sweep,
)

__all__ = [
    "CLUSTER_FIELDS",
    "LabelledPairs",
    "evaluate_clusters",
    "evaluate_scores",
    "read_clustering",
    "read_jsonl",
    "read_pairs",
    "read_texts",
]

CLUSTER_FIELDS = ("group", "cluster", "duplicate_of", "original", "canonical")


def _open(path: Path) -> IO[str]:
    try:
        if path.suffix == ".gz":
            return gzip.open(path, "rt", encoding="utf-8")
        return path.open("r", encoding="utf-8")
    except FileNotFoundError as exc:
        raise NotFoundError(f"no such file: {path}") from exc
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc}") from exc


def read_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """The objects of a JSON Lines file (``.gz`` decompressed); blank lines are skipped."""
    p = Path(path)
    with _open(p) as fh:
        try:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                obj = parse_json_line(line.encode("utf-8", "surrogateescape"))
                if isinstance(obj, InputError):
                    raise InputError(f"{p}:{number}: {obj}")
                if not isinstance(obj, dict):
                    raise InputError(f"{p}:{number}: expected a JSON object")
                yield obj
        except (UnicodeDecodeError, EOFError, gzip.BadGzipFile) as exc:
            raise InputError(f"{p}: cannot decode ({exc})") from exc


def read_texts(
    path: str | Path,
    wanted: Collection[str] | None = None,
    id_field: str = "id",
    text_field: str = "text",
) -> dict[str, str]:
    """``id -> text`` of the documents (only those in ``wanted`` when given)."""
    texts: dict[str, str] = {}
    for number, obj in enumerate(read_jsonl(path), 1):
        doc_id, text = obj.get(id_field), obj.get(text_field)
        if doc_id is None or not isinstance(text, str):
            raise InputError(f"{path}: document {number} lacks {id_field!r} or {text_field!r}")
        key = str(doc_id)
        if wanted is None or key in wanted:
            texts[key] = text
    return texts


@dataclasses.dataclass(frozen=True)
class LabelledPairs:
    """Pairs ``(id1, id2)``, their boolean labels, and each pair's original record."""

    pairs: list[tuple[str, str]]
    labels: npt.NDArray[np.bool_]
    records: list[dict[str, Any]]

    def ids(self) -> set[str]:
        """Every id the pairs mention."""
        return {x for pair in self.pairs for x in pair}

    def field(self, name: str) -> list[str]:
        """The value of ``name`` of each pair as a string (``"-"`` when absent)."""
        return [str(r.get(name, "-")) for r in self.records]


def _is_positive(value: Any, positive: Collection[str], where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        return value in positive
    raise InputError(f"{where}: label {value!r} is not a boolean, 0/1 or a string")


def read_pairs(
    path: str | Path,
    id_fields: tuple[str, str] = ("id1", "id2"),
    label_field: str = "label",
    positive: Collection[str] = ("duplicate",),
) -> LabelledPairs:
    """Labelled pairs from a JSON Lines file (see the module docstring for the format)."""
    pairs: list[tuple[str, str]] = []
    labels: list[bool] = []
    records: list[dict[str, Any]] = []
    for number, obj in enumerate(read_jsonl(path), 1):
        where = f"{path}:{number}"
        a, b = obj.get(id_fields[0]), obj.get(id_fields[1])
        if a is None or b is None:
            raise InputError(f"{where}: missing {id_fields[0]!r} or {id_fields[1]!r}")
        if label_field not in obj:
            raise InputError(f"{where}: missing label field {label_field!r}")
        pairs.append((str(a), str(b)))
        labels.append(_is_positive(obj[label_field], positive, where))
        records.append(obj)
    return LabelledPairs(pairs, np.array(labels, dtype=bool), records)


def evaluate_scores(
    scores: npt.ArrayLike,
    labels: npt.ArrayLike,
    threshold: float,
    groups: Sequence[str] | None = None,
) -> dict[str, Any]:
    """P/R/F1 at ``threshold``, the best threshold of the sweep, AUC, AP and (with
    ``groups``) the same per group.  Plain JSON-able values."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=bool)
    sweep = threshold_sweep(s, y)
    out: dict[str, Any] = {
        "pairs": int(s.size),
        "positives": int(y.sum()),
        "at_threshold": precision_recall_f1(s, y, threshold).to_dict(),
        "best": sweep.best().to_dict(),
        "roc_auc": _finite(roc_auc(s, y)),
        "average_precision": average_precision(s, y),
    }
    if groups is not None:
        g = np.asarray(groups)
        per: dict[str, Any] = {}
        for name in sorted(set(g.tolist())):
            mask = g == name
            m = precision_recall_f1(s[mask], y[mask], threshold)
            per[name] = {
                "pairs": int(mask.sum()),
                "positives": int(y[mask].sum()),
                "predicted": m.tp + m.fp,
                "recall": m.recall if m.tp + m.fn else None,
                "false_positive_rate": m.fp / (m.fp + m.tn) if m.fp + m.tn else None,
                "mean_score": float(s[mask].mean()),
            }
        out["groups"] = per
    return out


def _finite(x: float) -> float | None:
    return None if x != x else x


def score_labelled(method: Method, labelled: LabelledPairs, texts: Mapping[str, str]) -> Any:
    """The method's scores of every labelled pair (``NotFoundError`` for unknown ids)."""
    missing = labelled.ids() - texts.keys()
    if missing:
        example = sorted(missing)[:3]
        raise NotFoundError(f"{len(missing)} pair ids have no document, e.g. {example}")
    return score_pairs(method, labelled.pairs, texts)


# --- clusterings -------------------------------------------------------------------------------


def _cluster_of(obj: Mapping[str, Any], cluster_field: str | None) -> tuple[str, str] | None:
    doc_id = obj.get("id")
    if doc_id is None:
        return None
    nested = obj.get("synth")
    sources = [obj, nested] if isinstance(nested, Mapping) else [obj]
    fields = (cluster_field,) if cluster_field else CLUSTER_FIELDS
    for source in sources:
        for name in fields:
            if name in source:
                value = source[name]
                return str(doc_id), str(doc_id) if value is None else str(value)
    return None


def read_clustering(path: str | Path, cluster_field: str | None = None) -> dict[str, str]:
    """``id -> cluster`` from a JSON Lines file (see the module docstring for formats)."""
    out: dict[str, str] = {}
    for number, obj in enumerate(read_jsonl(path), 1):
        ids = obj.get("ids")
        if isinstance(ids, list):
            members = [str(x) for x in ids]
            if not members:
                continue
            name = "group:" + members[0]
            for m in members:
                out[m] = name
            continue
        found = _cluster_of(obj, cluster_field)
        if found is None:
            wanted = cluster_field or "/".join(CLUSTER_FIELDS)
            raise InputError(f"{path}:{number}: needs 'ids', or 'id' and a {wanted} field")
        out[found[0]] = found[1]
    return _resolve(out)


def _resolve(parent: dict[str, str]) -> dict[str, str]:
    """Follow chains (``a -> b -> c``: a duplicate of a duplicate) to their end, so every
    member of a chain gets the same cluster; cycles end where they close."""
    resolved: dict[str, str] = {}
    for start in parent:
        path = [start]
        seen = {start}
        node = parent[start]
        while node in parent and node not in seen and node not in resolved:
            seen.add(node)
            path.append(node)
            node = parent[node]
        root = resolved.get(node, node)
        for x in path:
            resolved[x] = root
    return resolved


def evaluate_clusters(
    truth: Mapping[str, str], predicted: Mapping[str, str], items: Collection[str] | None = None
) -> dict[str, Any]:
    """ARI and B-cubed of ``predicted`` against ``truth`` over ``items`` (default: the ids
    of ``truth``); an id absent from a mapping is its own cluster there (named by its id, so
    an original that a prediction names only as ``duplicate_of`` target joins its copies)."""
    ids = sorted(items if items is not None else truth.keys())
    t = [truth.get(i, i) for i in ids]
    p = [predicted.get(i, i) for i in ids]
    b = bcubed(t, p)
    return {
        "items": len(ids),
        "gold_clusters": len(set(t)),
        "predicted_clusters": len(set(p)),
        "ari": adjusted_rand_index(t, p),
        "bcubed": b.to_dict(),
        "unknown_predicted_ids": len(set(predicted) - set(ids)),
    }
