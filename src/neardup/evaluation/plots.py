"""PNG plots of evaluation results (matplotlib, non-interactive ``Agg`` backend).

* :func:`plot_pr_curves`: precision-recall curves of one or more methods on the same pairs.
* :func:`plot_score_distributions`: the score histogram of each label, per method.
* :func:`plot_threshold_curves`: precision, recall and F1 against the threshold.

Each function writes one PNG and returns its path; nothing is shown on screen, so they run
on servers.  matplotlib is an optional dependency (``neardup[plots]``): without it a clear
``ConfigError`` says how to install it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.errors import ConfigError
from neardup.evaluation.metrics import pr_curve, threshold_sweep

__all__ = ["plot_pr_curves", "plot_score_distributions", "plot_threshold_curves"]


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is installed in dev setups
        raise ConfigError("plots need matplotlib: pip install 'neardup[plots]'") from exc
    return plt


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    # Fixed metadata so the same figures give the same bytes run after run.
    fig.savefig(path, dpi=100, metadata={"Software": None})
    _pyplot().close(fig)
    return path


def plot_pr_curves(
    scores: Mapping[str, npt.ArrayLike],
    labels: npt.ArrayLike,
    path: str | Path,
    title: str = "Precision-recall",
) -> Path:
    """Precision-recall curves, one line per method (``scores``: method -> pair scores)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for name, values in scores.items():
        precision, recall, _ = pr_curve(values, labels)
        ax.step(recall, precision, where="post", label=name)
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    return _save(fig, Path(path))


def plot_score_distributions(
    scores: Mapping[str, npt.ArrayLike],
    groups: Sequence[str],
    path: str | Path,
    title: str = "Score per label",
    thresholds: Mapping[str, float] | None = None,
) -> Path:
    """Histograms of each method's scores split by ``groups`` (e.g. duplicate/similar/
    different), one panel per method; a dashed line marks the method's threshold if given."""
    plt = _pyplot()
    names = list(scores)
    cols = min(3, max(1, len(names)))
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 2.8 * rows), squeeze=False)
    group_arr = np.asarray(groups)
    kinds = sorted(set(group_arr.tolist()))
    bins = np.linspace(0.0, 1.0, 41)
    for k, name in enumerate(names):
        ax = axes[k // cols][k % cols]
        values = np.clip(np.asarray(scores[name], dtype=np.float64), 0.0, 1.0)
        for kind in kinds:
            ax.hist(values[group_arr == kind], bins=bins, alpha=0.5, label=kind, density=True)
        if thresholds and name in thresholds:
            ax.axvline(thresholds[name], color="k", linestyle="--", linewidth=1)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("score", fontsize=8)
    for k in range(len(names), rows * cols):
        axes[k // cols][k % cols].axis("off")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title)
    return _save(fig, Path(path))


def plot_threshold_curves(
    scores: npt.ArrayLike, labels: npt.ArrayLike, path: str | Path, title: str = "Threshold"
) -> Path:
    """Precision, recall and F1 of one method as functions of the threshold."""
    plt = _pyplot()
    sweep = threshold_sweep(scores, labels)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(sweep.thresholds, sweep.precision, label="precision")
    ax.plot(sweep.thresholds, sweep.recall, label="recall")
    ax.plot(sweep.thresholds, sweep.f1, label="F1")
    ax.set_xlabel("threshold (predict duplicate when score >= threshold)")
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, Path(path))
