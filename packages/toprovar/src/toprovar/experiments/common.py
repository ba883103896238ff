"""Training of the reproduction's three models through `shared_core.train.fit`, cached.

- the tokenizer (`MultiScaleVQ`): L2 reconstruction + VAR's VQ loss;
- the generator (`TinyVAR`): cross-entropy on the codes of the training images, teacher
  forced, the class dropped to the null class with probability ``cond_drop``;
- the evaluator (`Classifier`): a small CNN on the real images; its penultimate features
  give the Frechet distance, its predictions the class accuracy of generated images.

Each is saved as a checkpoint under ``shared_core.data.cache_dir("toprovar")`` named by a
hash of everything that determines it, so a second run (same scale, seed) only loads them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from shared_core.data import cache_dir
from shared_core.train import TrainConfig, fit, step_generator
from toprovar.model import TinyVAR
from toprovar.vq import MultiScaleVQ


@dataclass(frozen=True)
class ModelConfig:
    """Tokenizer and generator sizes (the tiny VAR)."""

    scales: tuple[int, ...] = (1, 2, 4, 8)  # VAR's next-scale sides; the last = feature side
    downsample: int = 2  # image side / feature side (16x16 images -> 8x8 codes)
    vocab: int = 64  # shared codebook size
    latent: int = 16  # codebook vector size (VAR's Cvae)
    hidden: int = 32  # tokenizer conv width
    dim: int = 64  # transformer width
    depth: int = 4  # transformer blocks
    heads: int = 4
    cond_drop: float = 0.1  # null-class rate in training (classifier-free guidance)


@dataclass(frozen=True)
class TrainSteps:
    """Optimisation of the three models (AdamW through `fit`)."""

    vq_steps: int = 600
    var_steps: int = 1500
    clf_steps: int = 300
    batch: int = 64
    vq_lr: float = 2e-3
    var_lr: float = 2e-3
    clf_lr: float = 2e-3


class Classifier(nn.Module):
    """Two conv layers and a 32-d feature layer: the evaluator of generated images."""

    def __init__(self, num_classes: int, side: int, features: int = 32) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.SiLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.SiLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * (side // 4) ** 2, features), nn.SiLU(),
        )  # fmt: skip
        self.out = nn.Linear(features, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.body(x))


CACHE_VERSION = 2  # bump when a model's parameters change names or meaning


def _ckpt(kind: str, domain: str, *parts: Any) -> Path:
    key = json.dumps([CACHE_VERSION, kind, domain, *parts], sort_keys=True, default=str)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir("toprovar") / f"{domain}-{kind}-{digest}.safetensors"


def _index_batch(n: int, batch: int, seed: int, step: int) -> torch.Tensor:
    return torch.randint(0, n, (batch,), generator=step_generator(seed, step))


def train_tokenizer(
    images: torch.Tensor, domain: str, model: ModelConfig, steps: TrainSteps, seed: int, device: str
) -> MultiScaleVQ:
    torch.manual_seed(seed)
    vq = MultiScaleVQ(
        1, model.hidden, model.latent, model.vocab, model.scales, downsample=model.downsample
    )

    def batch_fn(step: int) -> torch.Tensor:
        return images[_index_batch(len(images), steps.batch, seed, step)]

    def loss_fn(m: Any, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        rec, _, vq_loss = m(x)
        l2 = F.mse_loss(rec, x)
        return l2 + vq_loss, {"l2": float(l2.detach()), "vq": float(vq_loss.detach())}

    cfg = TrainConfig(steps=steps.vq_steps, lr=steps.vq_lr, warmup=20, weight_decay=0.0)
    ckpt = _ckpt(
        "vq", domain, asdict(model), steps.vq_steps, steps.vq_lr, steps.batch, seed, len(images)
    )
    fit(vq, loss_fn, batch_fn, cfg, checkpoint=ckpt, desc=f"{domain} tokenizer", device=device)
    return vq.eval()


def train_generator(
    images: torch.Tensor,
    labels: torch.Tensor,
    vq: MultiScaleVQ,
    domain: str,
    num_classes: int,
    model: ModelConfig,
    steps: TrainSteps,
    seed: int,
    device: str,
) -> TinyVAR:
    with torch.no_grad():
        vq_cpu = vq.to("cpu")
        _, codes, _ = vq_cpu.quantise(vq_cpu.encoder(images))
        inputs = vq_cpu.next_scale_inputs(codes)
        targets = torch.cat(codes, 1)
    torch.manual_seed(seed + 1)
    var = TinyVAR(
        model.vocab, model.latent, model.scales, num_classes, model.dim, model.depth,
        model.heads, cond_drop=model.cond_drop,
    )  # fmt: skip

    def batch_fn(step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        g = step_generator(seed + 1, step)
        i = torch.randint(0, len(images), (steps.batch,), generator=g)
        drop = torch.rand(steps.batch, generator=g) < model.cond_drop
        y = torch.where(drop, torch.full_like(labels[i], num_classes), labels[i])
        return y, inputs[i], targets[i]

    def loss_fn(m: Any, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        y, x, t = batch
        logits = m(y, x)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), t.reshape(-1))

    cfg = TrainConfig(steps=steps.var_steps, lr=steps.var_lr, warmup=50)
    ckpt = _ckpt("var", domain, asdict(model), asdict(steps), seed, len(images), num_classes)
    fit(var, loss_fn, batch_fn, cfg, checkpoint=ckpt, desc=f"{domain} VAR", device=device)
    return var.eval()


def train_classifier(
    images: torch.Tensor,
    labels: torch.Tensor,
    domain: str,
    num_classes: int,
    steps: TrainSteps,
    seed: int,
    device: str,
) -> Classifier:
    torch.manual_seed(seed + 2)
    clf = Classifier(num_classes, images.shape[-1])

    def batch_fn(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = step_generator(seed + 2, step)
        i = torch.randint(0, len(images), (steps.batch,), generator=g)
        # small noise so the evaluator is not thrown by the decoder's slight blur
        return images[i] + 0.1 * torch.randn(images[i].shape, generator=g), labels[i]

    def loss_fn(m: Any, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return F.cross_entropy(m(batch[0]), batch[1])

    cfg = TrainConfig(steps=steps.clf_steps, lr=steps.clf_lr, warmup=10)
    ckpt = _ckpt("clf", domain, steps.clf_steps, steps.clf_lr, steps.batch, seed, images.shape)
    fit(clf, loss_fn, batch_fn, cfg, checkpoint=ckpt, desc=f"{domain} classifier", device=device)
    return clf.eval()
