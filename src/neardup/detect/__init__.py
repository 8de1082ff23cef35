"""Detectors that work on signatures already computed: realtime result-set dedup (seed 000)."""

from __future__ import annotations

from neardup.detect.resultset import ResultSetDeduper, dedup_result_set

__all__ = ["ResultSetDeduper", "dedup_result_set"]
