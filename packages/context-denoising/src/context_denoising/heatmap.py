"""Heat-maps of per-token noise scores (what ``context-denoising score`` writes).

Each document is a dict of `context_denoising.verbs.score_document`: ``tokens``, ``role``
(``"context"`` / ``"answer"``), ``score`` (``||g_i||``), ``noise`` (CDT's mask) and
``threshold`` (the mean the mask compares with). A token's colour is its score over the
threshold, ``s_i / t`` (1 = the noise threshold), on a square-root scale capped at `CAP`: the
evidence the answer depends on stands out dark, the noise stays pale.

- HTML (`render_html`): the text as written, each token's background by score, noise tokens
  grey and dotted-underlined, answer tokens boxed; hovering a token shows its score.
- PNG (`render_png`, matplotlib): per document a grid of tokens in reading order
  (`WIDTH` a row), coloured by ``s_i / t``, noise tokens dotted, answer tokens outlined.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

CAP = 4.0  # colour saturates at 4x the noise threshold
WIDTH = 48  # tokens per row of the PNG grid
MAX_PNG_DOCUMENTS = 8  # a PNG shows the first 8 documents (the JSONL holds all)


def relative(document: Mapping[str, Any]) -> list[float]:
    """``s_i / t`` per token (0 when the threshold is 0)."""
    t = float(document["threshold"])
    return [float(s) / t if t > 0 else 0.0 for s in document["score"]]


def _shade(x: float) -> float:
    """Colour intensity in [0, 1] of a relative score: ``sqrt(min(x, CAP) / CAP)``."""
    return (min(max(x, 0.0), CAP) / CAP) ** 0.5


_STYLE = """
body { font-family: sans-serif; max-width: 60em; margin: 2em auto; color: #222; }
.doc { margin-bottom: 2.5em; }
.text { font-family: monospace; line-height: 1.9; white-space: pre-wrap; }
.tok { border-radius: 2px; }
.noise { color: #999; text-decoration: underline dotted #bbb; }
.answer { outline: 2px solid #1f77b4; }
.key span { padding: 0 0.4em; margin-right: 0.5em; }
"""


def render_html(
    documents: Sequence[Mapping[str, Any]], path: str | os.PathLike[str], *, title: str
) -> Path:
    """One HTML page: per document a header (line, noise share) and its coloured tokens."""
    from shared_core.atomic import atomic_write_text

    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<p class='key'>Background: the token's noise score over the noise threshold "
        f"(square-root scale, dark = {CAP:g}x or more). "
        "<span class='noise'>grey, dotted</span> noise (score at or below the threshold: "
        "CDT moves these embeddings); <span class='answer'>boxed</span> the answer "
        "(its loss is what the scores differentiate). Hover a token for its score.</p>",
    ]
    for doc in documents:
        context = sum(r == "context" for r in doc["role"])
        parts.append(
            f"<div class='doc'><h2>line {doc['line']}: {100 * doc['noise_fraction']:.0f}% of "
            f"{context} context tokens are noise (threshold {doc['threshold']:.3g})</h2>"
            "<div class='text'>"
        )
        for tok, role, s, x, noise in zip(
            doc["tokens"], doc["role"], doc["score"], relative(doc), doc["noise"], strict=True
        ):
            classes = (
                ["tok"] + (["noise"] if noise else []) + (["answer"] if role == "answer" else [])
            )
            colour = f"rgba(214, 39, 40, {_shade(x):.3f})"
            parts.append(
                f"<span class='{' '.join(classes)}' style='background:{colour}' "
                f"title='score {s:.3g} = {x:.2f} x threshold'>{html.escape(tok)}</span>"
            )
        parts.append("</div></div>")
    parts.append("</body></html>\n")
    return atomic_write_text(path, "".join(parts))


def render_png(
    documents: Sequence[Mapping[str, Any]], path: str | os.PathLike[str], *, title: str
) -> Path:
    """One PNG: per document (the first `MAX_PNG_DOCUMENTS`) a token grid coloured by score."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from shared_core.atomic import atomic_path

    shown = list(documents)[:MAX_PNG_DOCUMENTS]
    rows = [max(1, -(-len(d["score"]) // WIDTH)) for d in shown]
    fig, axes = plt.subplots(
        len(shown), 1, figsize=(10, 1.2 + 0.22 * sum(rows) + 0.6 * len(shown)), sharex=True,
        gridspec_kw={"height_ratios": rows}, squeeze=False, layout="constrained",
    )  # fmt: skip
    image: Any = None
    for ax, doc, n_rows in zip(axes[:, 0], shown, rows, strict=True):
        n = len(doc["score"])
        grid = np.full(n_rows * WIDTH, np.nan)
        grid[:n] = np.minimum(relative(doc), CAP)
        image = ax.imshow(
            grid.reshape(n_rows, WIDTH), cmap="Reds", vmin=0.0, vmax=CAP, aspect="auto",
            interpolation="nearest",
        )  # fmt: skip
        where = np.arange(n)
        noise = where[np.asarray(doc["noise"], dtype=bool)]
        ax.scatter(noise % WIDTH, noise // WIDTH, s=4, c="#777", marker=".", label="noise")
        answer = where[np.asarray([r == "answer" for r in doc["role"]], dtype=bool)]
        ax.scatter(answer % WIDTH, answer // WIDTH, s=40, facecolors="none",
                   edgecolors="#1f77b4", marker="s", label="answer")  # fmt: skip
        ax.set_title(
            f"line {doc['line']}: {100 * doc['noise_fraction']:.0f}% of the context is noise",
            fontsize=9,
        )
        ax.set_ylabel(f"row ({WIDTH} tokens)", fontsize=8)
        ax.set_yticks(range(n_rows))
        ax.tick_params(labelsize=7)
    axes[-1, 0].set_xlabel("token position within the row")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper right", fontsize=8, ncol=2)
    fig.colorbar(image, ax=axes[:, 0], label=f"score / noise threshold (capped at {CAP:g})")
    fig.suptitle(title, fontsize=11)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return Path(path)


def render(
    documents: Sequence[Mapping[str, Any]], path: str | os.PathLike[str], *, norm: str,
    region: str,
) -> Path:  # fmt: skip
    """`render_html` or `render_png` by the suffix of `path`."""
    where = "the whole row" if region == "row" else "the prompt"
    title = f"Noise scores ||g||_{norm[1]} per token (noise: at or below the mean over {where})"
    suffix = Path(path).suffix
    if suffix == ".html":
        return render_html(documents, path, title=title)
    if suffix == ".png":
        return render_png(documents, path, title=title)
    raise ValueError(f"path: expected a .html or .png file, got {str(path)!r}")
