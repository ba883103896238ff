"""``vadd train / sample / evaluate`` on a user's corpus or images.

The flags, files, checkpoint handling and reports are masked-diffusion's shared skeleton
(`masked_diffusion.verbs`); this module gives it VADD: the latent-conditioned decoder with its
recognition model, the DELBO (``objective="paper"``, default) or the valid T-step bound as the
training loss, the latent-conditioned sampler and the valid bound as the evaluation.

Samplers: ``latent`` (default, the paper's Algorithm 2: a fresh ``z ~ N(0, I)`` at every
denoising step) and ``latent-per-sample`` (one z per sequence). ``evaluate`` reports the valid
upper bound on ``-log p_T(x)`` of the ``--steps T`` sampler (nats and bits per token), and with
``--importance K`` the K-sample importance-weighted estimate of ``-log p_T(x)`` beside it.
``--set latent_dim=0`` trains the plain masked diffusion model (the MDLM baseline, no latent).
"""

from __future__ import annotations

import argparse
import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from masked_diffusion.verbs import (
    Method,
    Sampler,
    check_positive,
    evaluate_options,
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
    """VADD's ``train`` settings (``--set key=value``): masked-diffusion's MDLM sizes plus the
    latent (``latent_dim=0``: the plain masked diffusion model) and the objective."""

    steps: int = 300
    batch_size: int = 32
    lr: float = 3e-3
    warmup: int = 25
    checkpoint_every: int = 100  # steps between saves of the resumable train_state.pt
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    latent_dim: int = 4
    latent_hidden: int = 64
    objective: str = "paper"  # the paper's DELBO; "valid": the valid T-step bound
    objective_steps: int = 16  # T of objective="valid"
    anneal_steps: int = 0  # linear KL warm-up (0: none)
    schedule: str = "loglinear"

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "checkpoint_every", "d_model", "n_heads",
                     "n_layers", "latent_hidden", "objective_steps"):  # fmt: skip
            check_positive(name, getattr(self, name))
        if (
            isinstance(self.latent_dim, bool)
            or not isinstance(self.latent_dim, int)
            or self.latent_dim < 0
        ):
            raise UsageError(f"latent_dim: expected an int >= 0, got {self.latent_dim!r}")
        if not self.lr > 0:
            raise UsageError(f"lr: expected a positive learning rate, got {self.lr!r}")
        if self.objective not in ("paper", "valid"):
            raise UsageError(f"objective: expected 'paper' or 'valid', got {self.objective!r}")


SAMPLERS = ("latent", "latent-per-sample")
"""VADD's samplers; the first (the paper's, a fresh latent per step) is the default."""


def evaluate_flags(p: argparse.ArgumentParser) -> None:
    """``evaluate``'s flags: the shared ``--samples`` plus the sampler's T and the IW budget."""
    evaluate_options(p)
    p.add_argument("--steps", type=int, default=16, metavar="T",
                   help="sampling steps T of the bounded sampler (default: 16)")  # fmt: skip
    p.add_argument("--importance", type=int, default=0, metavar="K",
                   help="also the K-sample importance-weighted estimate of -log p_T (default: off)")  # fmt: skip


def _build(settings: TrainSettings, spec: TokenSpec, seq_len: int) -> torch.nn.Module:
    from vadd.model import VADDConfig
    from vadd.pretrained import VADDModel, VADDModelConfig

    image = spec.kind == "image"
    model = VADDConfig(
        spec.vocab_size, seq_len, latent_dim=settings.latent_dim, d_model=settings.d_model,
        n_heads=settings.n_heads, n_layers=settings.n_layers,
        latent_hidden=settings.latent_hidden, grid=(spec.height, spec.width) if image else None,
        learned_positions=image,
    )  # fmt: skip
    return VADDModel(VADDModelConfig(model, spec, settings.schedule))


def _loss_fn(settings: TrainSettings, model: Any) -> Callable[..., Any]:
    from vadd.train import ObjectiveConfig, vadd_loss_fn

    objective = ObjectiveConfig(
        objective=settings.objective, anneal_steps=settings.anneal_steps,
        steps=settings.objective_steps if settings.objective == "valid" else None,
        schedule=settings.schedule,
    )  # fmt: skip
    return vadd_loss_fn(objective)


def _sampler(latent: str) -> Sampler:
    def draw(model: Any, **kw: Any) -> torch.Tensor:
        from masked_diffusion import get_schedule

        from vadd.sampling import sample

        return sample(model, latent=latent, schedule=get_schedule(model.config.schedule), **kw)

    return draw


def _evaluate(
    model: Any, rows: torch.Tensor, extra: Mapping[str, Any], seed: int
) -> dict[str, float]:
    from masked_diffusion import NELBOEstimate, get_schedule

    from vadd.likelihood import iw_log_likelihood, valid_bound

    steps = check_positive("--steps", extra["steps"])
    k = extra["importance"]
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise UsageError(f"--importance: expected an int >= 0 (0: off), got {k!r}")
    schedule = get_schedule(model.config.schedule)
    length = rows.shape[1]
    bound = valid_bound(
        model, rows, steps, schedule=schedule, n_samples=extra["samples"], seed=seed
    )
    per_token = bound.double() / length
    n = per_token.numel()
    stderr = float(per_token.std() / math.sqrt(n)) if n > 1 else math.inf
    numbers: dict[str, float] = {
        "nelbo_nats": NELBOEstimate(float(per_token.mean()), stderr, n),
        "sampler_steps": steps,
    }
    if k:
        log_p = iw_log_likelihood(model, rows, steps, n_importance=k, schedule=schedule, seed=seed)
        nll = float(-log_p.double().mean()) / length
        numbers[f"iw{k}_nll_nats_per_token"] = nll
        numbers[f"iw{k}_bits_per_{model.config.data.unit}"] = nll / math.log(2)
    return numbers


@functools.cache
def vadd_method() -> Method:
    """vadd's `Method`: the VADD networks, their objective, the latent sampler, the valid bound."""
    from vadd.pretrained import VADDModel

    return Method(
        package="vadd", label="VADD", model_class=VADDModel, build=_build, loss_fn=_loss_fn,
        samplers={"latent": _sampler("step"), "latent-per-sample": _sampler("sample")},
        evaluate=_evaluate,
    )  # fmt: skip


def train(args: VerbArgs) -> int:
    """``vadd train``."""
    return run_train(vadd_method(), args)


def sample(args: VerbArgs) -> int:
    """``vadd sample``."""
    return run_sample(vadd_method(), args)


def evaluate(args: VerbArgs) -> int:
    """``vadd evaluate``."""
    return run_evaluate(vadd_method(), args)
