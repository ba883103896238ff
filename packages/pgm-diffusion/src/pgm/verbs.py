"""``pgm-diffusion train / sample / evaluate`` on a user's corpus or images.

The flags, files, checkpoint handling and reports are masked-diffusion's shared skeleton
(`masked_diffusion.verbs`); this module gives it the PGM: the partition network, its partition
loss, its packed samplers and its evaluation NELBO (exactly MDLM's estimator on the PGM's
full-length mode, so ``evaluate`` numbers compare with ``masked-diffusion evaluate``).

Samplers: ``partition`` (default; decode in a random order per row, ``counts="linear"``, the
authors' efficient-uniform text sampler, or a Halton order with ``counts="arccos"`` on images:
the encoder sees only the clean tokens), ``partition-confidence`` (MaskGIT confidence, packed)
and ``ancestral`` (MDLM's ancestral sampler on the full-length mode; the one that takes
``--prompt``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from masked_diffusion.verbs import (
    Method,
    Sampler,
    check_positive,
    run_evaluate,
    run_sample,
    run_train,
)

from shared_core.cli import UsageError

if TYPE_CHECKING:
    import torch
    from masked_diffusion import TokenSpec

    from shared_core.verbs import VerbArgs


@dataclass(frozen=True)
class TrainSettings:
    """PGM's ``train`` settings (``--set key=value``): masked-diffusion's MDLM defaults with its
    2 layers split into 1 encoder + 1 decoder block (the paper's 12 vs 6 + 6: matched depth)."""

    steps: int = 300
    batch_size: int = 32
    lr: float = 3e-3
    warmup: int = 25
    checkpoint_every: int = 100  # steps between saves of the resumable train_state.pt
    d_model: int = 64
    n_heads: int = 4
    n_encoder: int = 1
    n_decoder: int = 1
    schedule: str = "loglinear"

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "checkpoint_every", "d_model", "n_heads",
                     "n_encoder", "n_decoder"):  # fmt: skip
            check_positive(name, getattr(self, name))
        if not self.lr > 0:
            raise UsageError(f"lr: expected a positive learning rate, got {self.lr!r}")


SAMPLERS = ("partition", "partition-confidence", "ancestral")
"""The PGM's samplers; the first (packed, fixed order) is the default."""


def _build(settings: TrainSettings, spec: TokenSpec, seq_len: int) -> torch.nn.Module:
    from pgm.model import PGMConfig
    from pgm.pretrained import PGM, PGMModelConfig

    image = spec.kind == "image"
    model = PGMConfig(
        spec.vocab_size, seq_len, settings.d_model, settings.n_heads, settings.n_encoder,
        settings.n_decoder, grid=(spec.height, spec.width) if image else None,
        learned_positions=image,
    )  # fmt: skip
    return PGM(PGMModelConfig(model, spec, settings.schedule))


def _loss_fn(settings: TrainSettings, model: Any) -> Callable[..., Any]:
    from masked_diffusion import get_schedule

    from pgm.loss import pgm_loss_fn

    return pgm_loss_fn(get_schedule(settings.schedule), model.cfg.vocab_size)


def _sampler(kind: str) -> Sampler:
    def sample(model: Any, *, x_init: torch.Tensor | None, **kw: Any) -> torch.Tensor:
        from masked_diffusion import ancestral_sample, get_schedule, halton_order, random_order

        from pgm.loss import as_denoiser
        from pgm.sampling import pgm_confidence_sample, pgm_ordered_sample

        cfg, spec = model.cfg, model.config.data
        if kind == "ancestral":
            return ancestral_sample(
                as_denoiser(model, cfg.vocab_size), vocab_size=cfg.vocab_size,
                seq_len=cfg.seq_len, schedule=get_schedule(model.config.schedule),
                x_init=x_init, **kw,
            )  # fmt: skip
        if x_init is not None:
            raise UsageError(
                f"--prompt: the {kind} sampler starts from BOS alone; use --sampler ancestral "
                "to sample from a prompt"
            )
        if kind == "partition-confidence":
            return pgm_confidence_sample(model, **kw)
        if spec.kind == "image":
            order = halton_order(spec.height, spec.width)
            return pgm_ordered_sample(model, order, counts="arccos", **kw)
        n = kw.pop("batch_size")
        order = random_order(n, cfg.seq_len, kw["generator"], kw["device"])
        return pgm_ordered_sample(model, order, **kw)

    return sample


def _evaluate(
    model: Any, rows: torch.Tensor, extra: Mapping[str, Any], seed: int
) -> dict[str, float]:
    from masked_diffusion import get_schedule

    from pgm.loss import pgm_nelbo

    schedule = get_schedule(model.config.schedule)
    value = pgm_nelbo(
        model, rows, schedule, model.cfg.vocab_size, n_samples=extra["samples"], seed=seed
    )
    return {"nelbo_nats": value}


@functools.cache
def pgm_method() -> Method:
    """pgm-diffusion's `Method`: the partition network, its loss, samplers and NELBO."""
    from pgm.pretrained import PGM

    return Method(
        package="pgm-diffusion", label="PGM", model_class=PGM, build=_build, loss_fn=_loss_fn,
        samplers={k: _sampler(k) for k in SAMPLERS}, evaluate=_evaluate,
    )  # fmt: skip


def train(args: VerbArgs) -> int:
    """``pgm-diffusion train``."""
    return run_train(pgm_method(), args)


def sample(args: VerbArgs) -> int:
    """``pgm-diffusion sample``."""
    return run_sample(pgm_method(), args)


def evaluate(args: VerbArgs) -> int:
    """``pgm-diffusion evaluate``."""
    return run_evaluate(pgm_method(), args)
