"""Finding 2: DIST2Loss on VQ codes (class-conditional generation of sklearn digits).

Each 8x8 digit (levels 0..16, scaled to [0, 1]) is cut into 2x2 patches (a 4x4 grid, 16
codes per image); a k-means codebook (scikit-learn, K = 32) learned once on the training
pool quantises every patch to its nearest centroid. A small causal transformer
(`dist2loss.model.TinyCausalLM`) models ``[class token, c_1, ..., c_16]`` and is trained on
N = 100, 300, 1000 images with cross-entropy or CE + DIST2Loss, where the metric is the
squared distance between codebook centroids (`vq_table`) and tau is chosen by entropy
matching (`entropy_matched_tau`), on the same steps, batches and seeds.

Metrics: images sampled (temperature 1) for every class are decoded through the codebook
and compared with held-out real digits by the Fréchet distance in the 128 hidden features of a
digit classifier (a 64-128-10 MLP trained through `shared_core.train.fit` on the real
training pool), plus that classifier's accuracy on the samples against their conditioning
class and the model's held-out cross-entropy per code.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dist2loss.experiments.icl_regression import ModelConfig

if TYPE_CHECKING:  # torch is imported inside the functions: `dist2loss --help` stays fast
    import torch

    from dist2loss.metric import MetricTable

METHODS = ("ce", "dist2")
SIDE = 8  # sklearn digits are 8x8


@dataclass(frozen=True)
class Config:
    """One scale of the VQ finding; every field is the same for all methods."""

    sizes: tuple[int, ...] = (100, 300, 1000)  # N training images (nested subsets of the pool)
    seeds: int = 1
    methods: tuple[str, ...] = METHODS
    steps: int = 800
    batch: int = 32
    lr: float = 3e-3
    codebook: int = 32  # K codes
    patch: int = 2  # patch side: (8 / patch)^2 codes per image
    kmeans_init: int = 4
    test: int = 597  # held-out real images; the remaining 1,200 are the training pool
    per_class: int = 50  # generated images per class and seed
    entropy: float = 1.0  # nats: tau is set so the targets' mean entropy is this
    alpha: float = 0.1  # DIST2Loss KL weight (paper default)
    strong_alpha: float = 1.0  # the "dist2_strong" arm (the circulating code's KL weight)
    classifier_steps: int = 300
    model: ModelConfig = field(default_factory=ModelConfig)


SCALES: dict[str, Config] = {
    "micro": Config(sizes=(100,), steps=15, per_class=8, kmeans_init=1, classifier_steps=40),
    "tiny": Config(),
    "small": Config(seeds=3, steps=1500, methods=(*METHODS, "dist2_strong")),
    "paper": Config(
        sizes=(100, 300, 1000, 1200),
        seeds=5,
        steps=3000,
        codebook=64,
        methods=(*METHODS, "dist2_strong"),
        model=ModelConfig(d_model=128, layers=4, ff=512),
    ),
}


def labels_for(config: Config, tau: float) -> dict[str, str]:
    return {
        "ce": "CE",
        "dist2": f"CE + DIST2 (α={config.alpha:g}, τ={tau:.3g})",
        "dist2_strong": f"CE + DIST2 (α={config.strong_alpha:g}, τ={tau:.3g})",
    }


# --- data and codebook ------------------------------------------------------------------


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """sklearn digits as float64 images in [0, 1], shape (1797, 8, 8), and int64 labels."""
    from shared_core.data import load, require_extra

    require_extra("dist2loss", "experiments", "sklearn", "the VQ finding (sklearn digits, k-means)")
    images, labels = load("digits")
    return np.asarray(images, dtype=np.float64) / 16.0, np.asarray(labels, dtype=np.int64)


def split(n_total: int, test: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(pool, test) index arrays: a seeded permutation, the first `test` held out."""
    if not 0 < test < n_total:
        raise ValueError(f"test: expected 0 < test < {n_total}, got {test}")
    perm = np.random.default_rng(seed).permutation(n_total)
    return perm[test:], perm[:test]


def to_patches(images: np.ndarray, patch: int) -> np.ndarray:
    """(n, S, S) -> (n, (S/patch)^2, patch^2), patches in row-major grid order."""
    n, s, s2 = images.shape
    if s != s2 or s % patch:
        raise ValueError(f"patch: expected a divisor of the image side {s}, got {patch}")
    g = s // patch
    x = images.reshape(n, g, patch, g, patch).transpose(0, 1, 3, 2, 4)
    return x.reshape(n, g * g, patch * patch)


def from_patches(patches: np.ndarray, patch: int) -> np.ndarray:
    """The inverse of `to_patches`: (n, g^2, patch^2) -> (n, g*patch, g*patch)."""
    n, cells, _ = patches.shape
    g = math.isqrt(cells)
    x = patches.reshape(n, g, g, patch, patch).transpose(0, 1, 3, 2, 4)
    return x.reshape(n, g * patch, g * patch)


@dataclass(frozen=True, eq=False)
class Codebook:
    """A VQ codebook over image patches: K centroids of dimension patch^2."""

    centroids: np.ndarray  # (K, patch^2) float64
    patch: int

    @property
    def size(self) -> int:
        return int(self.centroids.shape[0])

    def encode(self, images: np.ndarray) -> np.ndarray:
        """(n, S, S) images -> (n, (S/patch)^2) int64 codes of the nearest centroids."""
        p = to_patches(images, self.patch)
        d = ((p[:, :, None, :] - self.centroids[None, None]) ** 2).sum(-1)
        return d.argmin(-1).astype(np.int64)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """(n, L) codes -> (n, S, S) images made of the centroids."""
        codes = np.asarray(codes)
        if codes.min() < 0 or codes.max() >= self.size:
            raise ValueError(
                f"codes: expected values in [0, {self.size}), got range [{codes.min()}, {codes.max()}]"
            )
        return from_patches(self.centroids[codes], self.patch)


def fit_codebook(images: np.ndarray, k: int, patch: int, seed: int, n_init: int = 4) -> Codebook:
    """k-means (scikit-learn) on every patch of `images`: the codebook learner."""
    from sklearn.cluster import KMeans

    p = to_patches(images, patch).reshape(-1, patch * patch)
    km = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(p)
    return Codebook(np.asarray(km.cluster_centers_, dtype=np.float64), patch)


def sequences(codes: np.ndarray, labels: np.ndarray, k: int) -> torch.Tensor:
    """(n, 1 + L) int64 token sequences ``[class token (k + label), codes...]``."""
    import torch

    cls = (k + labels).astype(np.int64)[:, None]
    return torch.from_numpy(np.concatenate([cls, codes], axis=1))


def code_table(book: Codebook) -> MetricTable:
    """V_d = the K codes (ids 0..K-1) of a vocabulary with 10 class tokens after them."""
    from dist2loss.metric import vq_table

    return vq_table(range(book.size), book.centroids, book.size + 10)


# --- the digit classifier (the Fréchet distance's feature extractor) -----------------------


def classifier(seed: int, steps: int, images: np.ndarray, labels: np.ndarray, device: str) -> Any:
    """A 64-128-10 MLP (ReLU) trained through `fit` on real digits; features = its 128 hidden units."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from shared_core.train import TrainConfig, fit, step_generator

    torch.manual_seed(seed)
    model = nn.Sequential(nn.Flatten(), nn.Linear(SIDE * SIDE, 128), nn.ReLU(), nn.Linear(128, 10))
    x = torch.as_tensor(images, dtype=torch.float32)
    y = torch.as_tensor(labels, dtype=torch.int64)

    def batch_fn(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.randint(0, len(x), (128,), generator=step_generator(seed, step))
        return x[rows], y[rows]

    def loss_fn(m: Any, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return F.cross_entropy(m(batch[0]), batch[1])

    tc = TrainConfig(steps=steps, lr=3e-3, warmup=max(1, steps // 20), weight_decay=1e-4)
    fit(model, loss_fn, batch_fn, tc, desc="classifier", device=device, show_progress=False)
    return model.cpu().eval()


def features_and_predictions(clf: Any, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import torch

    with torch.no_grad():
        x = torch.as_tensor(images, dtype=torch.float32)
        h = clf[:3](x)
        pred = clf[3](h).argmax(-1)
    return h.double().numpy(), pred.numpy()


# --- the AR model over codes ---------------------------------------------------------------


def make_loss(method: str, table: MetricTable, tau: float, config: Config) -> Any:
    """``loss_fn(model, (inputs, labels))`` for `shared_core.train.fit`."""
    import torch.nn.functional as F

    from dist2loss.loss import dist2_loss

    alpha = {"dist2": config.alpha, "dist2_strong": config.strong_alpha}.get(method)
    if method != "ce" and alpha is None:
        raise ValueError(f"method: expected one of ('ce', 'dist2', 'dist2_strong'), got {method!r}")

    def loss_fn(model: Any, batch: tuple[torch.Tensor, torch.Tensor]) -> Any:
        inputs, labels = batch
        logits = model(inputs)
        if alpha is None:
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        return dist2_loss(logits, labels, table, tau, alpha, return_parts=True)

    return loss_fn


def sample_codes(
    model: torch.nn.Module, classes: torch.Tensor, length: int, k: int, seed: int
) -> torch.Tensor:
    """(n, length) codes sampled at temperature 1 after the class tokens, restricted to codes."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    tokens = (k + classes).to(torch.int64)[:, None].to(device)
    model.eval()
    with torch.no_grad():
        for _ in range(length):
            probs = torch.softmax(model(tokens)[:, -1, :k].double().cpu(), -1)
            nxt = torch.multinomial(probs, 1, generator=gen).to(device)
            tokens = torch.cat([tokens, nxt], 1)
    return tokens[:, 1:].cpu()


def heldout_ce(model: torch.nn.Module, seq: torch.Tensor) -> float:
    """Mean cross-entropy (nats per code) of held-out sequences, teacher-forced."""
    import torch
    import torch.nn.functional as F

    device = next(model.parameters()).device
    model.eval()
    with torch.no_grad():
        logits = model(seq[:, :-1].to(device))
        return float(
            F.cross_entropy(logits.reshape(-1, logits.shape[-1]), seq[:, 1:].reshape(-1).to(device))
        )


def train_one(
    method: str,
    train_seq: torch.Tensor,
    table: MetricTable,
    tau: float,
    seed: int,
    config: Config,
    device: str,
) -> torch.nn.Module:
    import torch

    from dist2loss.model import TinyCausalLM
    from shared_core.train import TrainConfig, fit, step_generator

    torch.manual_seed(seed)
    m = config.model
    n, length = train_seq.shape
    model = TinyCausalLM(table.vocab_size, m.d_model, m.layers, m.heads, m.ff, length)

    def batch_fn(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.randint(0, n, (config.batch,), generator=step_generator(seed, step))
        s = train_seq[rows]
        return s[:, :-1], s[:, 1:]

    tc = TrainConfig(steps=config.steps, lr=config.lr, warmup=max(1, config.steps // 20))
    fit(
        model,
        make_loss(method, table, tau, config),
        batch_fn,
        tc,
        desc=f"vq {method} N={n}",
        device=device,
        show_progress=False,
    )
    return model


# --- the experiment ------------------------------------------------------------------------


def fd_interval(
    gen: np.ndarray, real: np.ndarray, seed: int, n_resamples: int = 200
) -> tuple[float, float, float]:
    """FD(gen, real) and a 95 % median-centred bootstrap interval over the generated rows.

    FD is biased upward on a resample, so the interval is `bootstrap_ci`'s median-centred
    one (the estimate stays inside); its low end is clipped at 0.
    """
    from shared_core.metrics import bootstrap_ci, frechet_distance

    fd, lo, hi = bootstrap_ci(
        lambda g: frechet_distance(g, real),
        gen,
        n_resamples=n_resamples,
        seed=seed,
        centre="median",
    )
    return fd, max(0.0, lo), hi


def run_in(run: Any, config: Config, seed: int, device: str) -> dict[str, Any]:
    """Run the VQ finding inside an open `shared_core.report.Run`; returns its results."""
    import torch

    from dist2loss.metric import entropy_matched_tau
    from shared_core.metrics import bootstrap_ci, frechet_distance

    unknown = [m for m in config.methods if m not in ("ce", "dist2", "dist2_strong")]
    if unknown:
        raise ValueError(
            f"methods: unknown {unknown}, expected among ['ce', 'dist2', 'dist2_strong']"
        )
    if max(config.sizes) > 1797 - config.test:
        raise ValueError(
            f"sizes: expected at most {1797 - config.test} training images (1797 - test), got {max(config.sizes)}"
        )
    t0 = time.perf_counter()
    images, labels = load_digits()
    pool, test = split(len(images), config.test, seed)
    book = fit_codebook(images[pool], config.codebook, config.patch, seed, config.kmeans_init)
    table = code_table(book)
    tau = entropy_matched_tau(table, config.entropy)
    names = labels_for(config, tau)
    k = book.size
    codes = book.encode(images)
    seqs = sequences(codes, labels, k)
    clf = classifier(seed, config.classifier_steps, images[pool], labels[pool], device)
    real_f, real_pred = features_and_predictions(clf, images[test])
    pool_f, _ = features_and_predictions(clf, images[pool])
    recon_f, recon_pred = features_and_predictions(clf, book.decode(codes[pool]))
    clf_acc = float(np.mean(real_pred == labels[test]))
    references = {
        "classifier_test_accuracy": clf_acc,
        "fd_real_pool_vs_test": frechet_distance(pool_f, real_f),
        "fd_codebook_reconstruction_vs_test": frechet_distance(recon_f, real_f),
        "reconstruction_accuracy": float(np.mean(recon_pred == labels[pool])),
        "reconstruction_mse": float(np.mean((book.decode(codes[pool]) - images[pool]) ** 2)),
        "tau": tau,
        "target_entropy_nats": config.entropy,
        "setup_seconds": time.perf_counter() - t0,
    }
    run.add_row(
        "vq references",
        what="real training pool vs held-out (floor)",
        FD=round(references["fd_real_pool_vs_test"], 3),
        accuracy=round(clf_acc, 3),
    )
    run.add_row(
        "vq references",
        what=f"codebook reconstruction (K={k}) vs held-out",
        FD=round(references["fd_codebook_reconstruction_vs_test"], 3),
        accuracy=round(references["reconstruction_accuracy"], 3),
    )
    classes = torch.arange(10).repeat_interleave(config.per_class)
    results: dict[str, dict[int, dict[str, float]]] = {m: {} for m in config.methods}
    gallery: dict[str, np.ndarray] = {}  # one sample per class: smallest N, first seed
    for n in config.sizes:
        train_seq = seqs[torch.from_numpy(pool[:n])]
        for method in config.methods:
            t1 = time.perf_counter()
            feats, correct, ces = [], [], []
            for s in range(config.seeds):
                model = train_one(method, train_seq, table, tau, seed + s, config, device)
                ces.append(heldout_ce(model, seqs[torch.from_numpy(test)]))
                gen = sample_codes(model, classes, codes.shape[1], k, seed=10**6 + seed + s)
                decoded = book.decode(gen.numpy())
                if n == min(config.sizes) and s == 0:
                    gallery[method] = decoded[:: config.per_class]
                f, pred = features_and_predictions(clf, decoded)
                feats.append(f)
                correct.append(pred == classes.numpy())
            gen_f, ok = np.concatenate(feats), np.concatenate(correct).astype(np.float64)
            fd, lo, hi = fd_interval(gen_f, real_f, seed)
            acc, alo, ahi = bootstrap_ci(lambda c: float(np.mean(c)), ok, seed=seed)
            ce = float(np.mean(ces))
            results[method][n] = {
                "fd": fd,
                "fd_lo": lo,
                "fd_hi": hi,
                "accuracy": acc,
                "accuracy_lo": alo,
                "accuracy_hi": ahi,
                "heldout_ce": ce,
            }
            run.add_row(
                "vq",
                N=n,
                method=names[method],
                FD=f"{fd:.3f} [{lo:.3f}, {hi:.3f}]",
                accuracy=f"{acc:.3f} [{alo:.3f}, {ahi:.3f}]",
                heldout_CE=round(ce, 4),
                seconds=round(time.perf_counter() - t1, 1),
            )
    out = {
        "references": references,
        "results": {m: {str(n): v for n, v in r.items()} for m, r in results.items()},
    }
    run.log(vq=out)
    _plot(run, results, names, config, references)
    _plot_samples(run, gallery, names, min(config.sizes), seed)
    return out


def _plot(
    run: Any,
    results: dict[str, dict[int, dict[str, float]]],
    names: dict[str, str],
    config: Config,
    references: dict[str, float],
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4), dpi=110)
    panels = (
        ("fd", "Fréchet distance to held-out digits (lower is better)"),
        ("accuracy", "classifier accuracy on samples"),
        ("heldout_ce", "held-out cross-entropy, nats per code"),
    )
    for ax, (key, label) in zip(axes, panels, strict=True):
        for method, rows in results.items():
            ns = sorted(rows)
            y = [rows[n][key] for n in ns]
            if f"{key}_lo" in rows[ns[0]]:
                err = [
                    [max(0.0, rows[n][key] - rows[n][f"{key}_lo"]) for n in ns],
                    [max(0.0, rows[n][f"{key}_hi"] - rows[n][key]) for n in ns],
                ]
                ax.errorbar(ns, y, yerr=err, marker="o", capsize=3, label=names[method])
            else:
                ax.plot(ns, y, marker="o", label=names[method])
        ref = {"fd": "fd_codebook_reconstruction_vs_test", "accuracy": "reconstruction_accuracy"}
        if key in ref:
            ax.axhline(references[ref[key]], color="gray", ls="--")
        else:  # the legend (on this panel) names the other panels' dashed line
            ax.plot([], [], color="gray", ls="--", label="codebook reconstruction (FD, accuracy)")
        ax.set_xscale("log")
        ax.minorticks_off()
        ax.set_xticks(list(config.sizes), [str(n) for n in config.sizes])
        ax.set_xlabel("training images N")
        ax.set_ylabel(label, fontsize=8)
        ax.grid(alpha=0.3)
    axes[0].set_title("VQ digits: samples vs data (95 % bootstrap CI)", fontsize=9)
    axes[2].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8)
    fig.tight_layout()
    run.save_figure("vq_fd_vs_n", fig)


def _plot_samples(
    run: Any, gallery: dict[str, np.ndarray], names: dict[str, str], n: int, seed: int
) -> None:
    """One row of decoded samples per method (one per class): a visual sanity check."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = len(gallery)
    fig, axes = plt.subplots(rows, 10, figsize=(10, 1.2 * rows + 0.5), dpi=100, squeeze=False)
    for r, (method, imgs) in enumerate(gallery.items()):
        for c in range(10):
            axes[r, c].imshow(imgs[c], cmap="gray_r", vmin=0, vmax=1)
            axes[r, c].set_xticks([])
            axes[r, c].set_yticks([])
        axes[r, 0].set_ylabel(names[method], fontsize=6, rotation=0, ha="right", va="center")
    fig.suptitle(f"one sample per class 0-9 (N = {n} training images, seed {seed})", fontsize=9)
    fig.tight_layout()
    run.save_figure("vq_samples", fig)


def notes(config: Config) -> str:
    return (
        f"{config.seeds} seed(s) per cell; {config.per_class * 10 * config.seeds} samples per "
        f"cell vs {config.test} held-out digits; Fréchet distance in the classifier's hidden "
        f"features with a 95 % median-centred bootstrap interval over samples; K = {config.codebook} k-means "
        f"codes of {config.patch}x{config.patch} patches."
    )
