"""Evaluation: synthetic copies with known edits, quality metrics, plots and reports.

Top layer (with ``cli`` and ``service``): it may import any lower layer, nothing imports it.
"""
