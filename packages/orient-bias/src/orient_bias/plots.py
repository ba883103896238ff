"""Orientation plots: principal-axis directions on the sphere in the equal-area Mollweide
projection (paper §5), and the histogram of angles to the most common orientation."""

from __future__ import annotations

from typing import Any

import numpy as np

from orient_bias.rotations import haar_angle_pdf

__all__ = ["angle_histogram", "mollweide_axes"]

_COLOURS = ("#648FFF", "#DC267F", "#FFB000")  # IBM colour-blind-safe palette, as the paper


def _lonlat(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    v = v / np.linalg.norm(v, axis=-1, keepdims=True)
    return np.arctan2(v[:, 1], v[:, 0]), np.arcsin(np.clip(v[:, 2], -1, 1))


def mollweide_axes(
    panels: dict[str, np.ndarray],
    colour: np.ndarray | None = None,
    colour_label: str = "",
    max_points: int = 20000,
    seed: int = 0,
) -> Any:
    """One Mollweide panel per entry of `panels` (``axes (B, 3, 3)``, rows PC1..PC3).

    Without `colour` the three axes get three colours; with `colour` ``(B,)`` each panel shows
    PC1 only, coloured by that descriptor (e.g. ring count).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(5.2 * len(panels), 3.2), dpi=120)
    rng = np.random.default_rng(seed)
    for k, (title, axes) in enumerate(panels.items()):
        ax = fig.add_subplot(1, len(panels), k + 1, projection="mollweide")
        sel = np.arange(len(axes))
        if len(sel) > max_points:
            sel = np.sort(rng.choice(len(sel), max_points, replace=False))
        if colour is None:
            for j in range(3):
                lon, lat = _lonlat(axes[sel, j])
                ax.scatter(
                    lon,
                    lat,
                    s=1.5,
                    alpha=0.15,
                    color=_COLOURS[j],
                    label=f"PC{j + 1}",
                    rasterized=True,
                )
            if k == 0:
                ax.legend(loc="lower left", fontsize=6, markerscale=4)
        else:
            lon, lat = _lonlat(axes[sel, 0])
            sc = ax.scatter(
                lon, lat, s=1.5, alpha=0.5, c=colour[sel], cmap="viridis", rasterized=True
            )
            fig.colorbar(sc, ax=ax, shrink=0.6, label=colour_label)
        ax.set_title(title, fontsize=9)
        ax.set_xticklabels([])
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def angle_histogram(series: dict[str, np.ndarray], bins: int = 40) -> Any:
    """Histogram of geodesic angles to the most common orientation vs the Haar density (1 - cos ω)/π."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    edges = np.linspace(0, np.pi, bins + 1)
    for label, ang in series.items():
        ax.hist(ang, bins=edges.tolist(), density=True, histtype="step", lw=1.5, label=label)
    w = np.linspace(0, np.pi, 200)
    ax.plot(w, haar_angle_pdf(w), "k--", lw=1, label="Haar (1 - cos ω)/π")
    ax.set_xlabel("angle to most common orientation ω (rad)")
    ax.set_ylabel("density")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
