"""Duplicate groups: which group a new article joins, merges and take-overs.

A group is its *original* (its earliest article by ``date``, undated after dated, ties by
id) and the articles that duplicate it.  A new article joins a group when it duplicates
the group's original itself, so a group never grows along a chain of write-thrus each a
duplicate of the last:

* it joins the earliest such group; the other groups whose originals it duplicates and
  that duplicate that group's original are merged into it;
* when the new article is earlier than that original, it takes over: its status is
  ``new`` and every member of the groups now points at it;
* an article that duplicates members of groups but none of their originals is a
  ``duplicate`` (of the member it duplicates best) at the head of a group of its own.

Groups live in the store only (its ``original`` column); these functions read and write it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from neardup.rule import Profile
from neardup.store import GroupOriginal, Store

__all__ = ["Placement", "order_key", "place", "regroup"]

ProfileOf = Callable[[int], Profile]  # a stored article's profile, by seq
Label = Callable[[Profile, Profile], str]


@dataclasses.dataclass(frozen=True, slots=True)
class Placement:
    """Where a new article goes: its status, its group's original (``None``: it heads a
    group), what it duplicates, the ids it took over, the group originals merged."""

    status: str = "new"
    original: str | None = None
    duplicate_of: str | None = None
    took_over: tuple[str, ...] = ()
    merged: tuple[str, ...] = ()


def order_key(date_us: int | None, article_id: str) -> tuple[bool, int, str]:
    """Earliest first; undated after dated; ties by id."""
    return (date_us is None, date_us or 0, article_id)


def place(
    store: Store,
    prof: Profile,
    date_us: int | None,
    article_id: str,
    matches: Sequence[tuple[str, str]],
    profile_of: ProfileOf,
    label: Label,
) -> Placement:
    """Place a new article among the groups of its matches (``(id, verdict)``, best
    first; module docstring), writing the take-over or the merges to the store."""
    dup_ids = [i for i, verdict in matches if verdict == "duplicate"]
    groups = _joinable(store, prof, matches, dup_ids, profile_of, label)
    if groups:
        earliest = groups[0]
        first = profile_of(earliest.seq)
        merged = [g for g in groups[1:] if label(first, profile_of(g.seq)) == "duplicate"]
        merged_ids = tuple(g.id for g in merged)
        if order_key(date_us, article_id) < order_key(earliest.date_us, earliest.id):
            took_over = regroup(store, [earliest, *merged], article_id)
            return Placement(took_over=took_over, merged=merged_ids)
        if merged:
            regroup(store, merged, earliest.id)
        return Placement("duplicate", earliest.id, earliest.id, merged=merged_ids)
    if dup_ids:
        # Duplicates of group members but of no group's original (a later write-thru of a
        # write-thru): a duplicate, at the head of a group of its own.
        return Placement("duplicate", duplicate_of=dup_ids[0])
    if matches:
        return Placement(matches[0][1])
    return Placement()


def _joinable(
    store: Store,
    prof: Profile,
    matches: Sequence[tuple[str, str]],
    dup_ids: Sequence[str],
    profile_of: ProfileOf,
    label: Label,
) -> list[GroupOriginal]:
    """The originals of the groups of the duplicate matches that the new article
    duplicates itself, earliest first."""
    if not dup_ids:
        return []
    verdicts = dict(matches)
    joinable = [
        g
        for g in store.group_originals(dup_ids)
        if (verdicts.get(g.id) or label(prof, profile_of(g.seq))) == "duplicate"
    ]
    return sorted(joinable, key=lambda g: order_key(g.date_us, g.id))


def regroup(store: Store, originals: Sequence[GroupOriginal], new_original: str) -> tuple[str, ...]:
    """Point every member of the groups of ``originals`` (and the originals) at
    ``new_original``; the ids moved, in group order."""
    moved: list[str] = []
    for g in originals:
        moved.extend((g.id, *store.members_of(g.id)))
    if moved:
        store.set_original(moved, new_original)
    return tuple(moved)
