"""Bounded memo dicts, one per key (a configuration, a seed), for the per-token caches of the
text stage and the token hashes.

Guarantees: memory is bounded (at most ``max_keys + 1`` dicts, each emptied once it holds more
than ``limit`` entries); a cache never changes a result, so emptying one is always safe.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

__all__ = ["bounded_cache"]

V = TypeVar("V")


def bounded_cache(
    caches: dict[Hashable, dict[str, V]], key: Hashable, limit: int, max_keys: int = 64
) -> dict[str, V]:
    """The memo dict of ``key`` in ``caches``: a new one for a new key (all are dropped first
    when more than ``max_keys`` are kept), emptied when it holds more than ``limit`` entries."""
    cache = caches.get(key)
    if cache is None:
        if len(caches) > max_keys:
            caches.clear()
        cache = caches[key] = {}
    elif len(cache) > limit:
        cache.clear()
    return cache
