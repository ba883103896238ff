"""MELD's training loss and exact sampler, and the two baselines of the paper, on graph rows.

All arms see a molecule as a flat row of atom and bond tokens (`meld_diffusion.data`), train
the same denoiser (`GraphTransformer`) and differ in the forward process only:

- vanilla MDM with the power-law schedule (`vanilla_loss`, `vanilla_sample`):
  `masked_diffusion` unchanged, every element kept with ``gamma(t) = 1 - (1 - eps) t``;
- MELD (`meld_loss`, `meld_sample`; paper note, Method): element i kept with
  ``gamma_i(t) = 1 - (1 - eps) t^{w_i}``, rates ``w = phi(pi)`` read from H's columns
  (`meld_diffusion.rates.ElementRates`), pi a random column assignment per graph; the
  denoiser is given the same embeddings, so it models ``p(g | pi)``;
- class-level (GenMD4; the paper's ablation): ``w_i = softplus(a_{type(x_0^i)})``
  (`class_loss`, `class_sample`).

The loss is the MDM NELBO with per-element weights (paper: "the weighted cross-entropy
integral from MDM, but gamma and its derivative now depend on phi"):

    L = E_t E_{g_t ~ q_phi(. | g_0)} sum_i 1[g_t^i = mask] w_i(t) (-log p_theta(g_0^i | g_t, t)),
    w_i(t) = -gamma_i'(t) / (1 - gamma_i(t))  (= w_i / t for the power law).

The masks are Bernoulli draws, so phi gets gradients through a straight-through Gumbel-softmax
(paper, Key design 3) over the two states {clean, mask}: the forward pass uses the hard mask
``m = 1[u < p_i]`` (the draw of ``masked_diffusion.q_xt``), the backward pass the gradient of
``sigmoid((logit p_i - logit u) / tau)`` (``-logit u`` is the difference of two Gumbels). ``m``
multiplies the terms and mixes the denoiser's one-hot input ``(1 - m) onehot(g_0) + m
onehot(mask)``; an element that is still clean contributes exactly zero (MDM's carry-over), so
its untrained cross-entropy never reaches phi (`element_terms` has the alternatives).

Sampling is exact: the rates are known before generation (they depend on pi only), so each
step of ``masked_diffusion.ancestral_sample`` reveals element i with probability
``(gamma_i(s) - gamma_i(t)) / (1 - gamma_i(t))`` (its ``unmask_prob`` hook). For the
class-level schedule the rates depend on the unknown clean value, and the hook gives the
reverse step of the factorised posterior per value (GenMD4's sampler).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import torch
import torch.nn.functional as F
from masked_diffusion import (
    Schedule,
    ancestral_sample,
    check_logits,
    nelbo_terms,
    q_xt,
    sample_t,
)
from torch import nn

from meld_diffusion.data import VOCAB_SIZE, check_graph_batch, valid_positions
from meld_diffusion.rates import ClassRates, ElementRates, check_columns
from meld_diffusion.schedule import ElementwiseSchedule


class GraphMDM(nn.Module):
    """A denoiser and its schedule network: `ElementRates` (MELD), `ClassRates` or None (vanilla).

    ``model(x_t, t, n_atoms, pos=None)`` calls the denoiser ``denoiser(x_t, n_atoms, t, pos)``
    (x_t (batch, L) tokens or (batch, L, 5) one-hot, t (batch,), n_atoms (batch,),
    pos (batch, N, D) element embeddings) and returns logits (batch, L, 4).
    """

    def __init__(self, denoiser: nn.Module, rates: ElementRates | ClassRates | None = None) -> None:
        super().__init__()
        self.denoiser = denoiser
        self.rates = rates

    def forward(
        self,
        x: torch.Tensor,
        t: torch.Tensor,
        n_atoms: torch.Tensor,
        pos: torch.Tensor | None = None,
    ) -> torch.Tensor:
        return self.denoiser(x, n_atoms, t, pos)


def vocab_of(model: nn.Module) -> int:
    """The token count V of `model`'s rows (its denoiser's ``cfg.vocab_size``, else QM9's 4);
    the mask id is V."""
    inner = getattr(model, "module", model)  # DDP keeps `.module`
    cfg = getattr(getattr(inner, "denoiser", None), "cfg", None)
    return int(getattr(cfg, "vocab_size", VOCAB_SIZE))


@dataclass
class GraphLossOutput:
    """A loss evaluation: `loss` (mean NELBO per existing element, nats), `terms` (batch, L),
    times `t`, noisy rows `x_t`, denoiser `logits`, realised rates `w` (batch, L) (ones for
    vanilla) and MELD's column assignment `columns` (batch, N) (None otherwise)."""

    loss: torch.Tensor
    terms: torch.Tensor
    t: torch.Tensor
    x_t: torch.Tensor
    logits: torch.Tensor
    w: torch.Tensor
    columns: torch.Tensor | None = None


def _times(
    x0: torch.Tensor,
    t: torch.Tensor | None,
    generator: torch.Generator | None,
    sampling_eps: float,
) -> torch.Tensor:
    if t is not None:
        if (
            not isinstance(t, torch.Tensor)
            or not torch.is_floating_point(t)
            or t.shape != (x0.shape[0],)
        ):
            raise ValueError(f"t: expected a floating ({x0.shape[0]},) tensor, got {t!r:.60}")
        if not bool(((t > 0) & (t <= 1)).all()):
            raise ValueError(f"t: expected times in (0, 1], got {t.tolist()[:8]}")
        return t
    return sample_t(x0.shape[0], sampling_eps=sampling_eps, generator=generator, device=x0.device)


R = TypeVar("R", ElementRates, ClassRates)


def _rates_of(model: nn.Module, kind: type[R]) -> R:
    rates = getattr(getattr(model, "module", model), "rates", None)  # DDP keeps `.module`
    if not isinstance(rates, kind):
        raise TypeError(
            f"model: expected a GraphMDM with {kind.__name__} rates, got {type(rates).__name__}"
        )
    return rates


def _check_eps(schedule: ElementwiseSchedule, rates: ElementRates) -> None:
    """ValueError unless the schedule's eps is the model's `MELDConfig.eps` (one source)."""
    if schedule.base.eps != rates.cfg.eps:
        raise ValueError(
            f"schedule: its base has eps={schedule.base.eps!r} but the model's MELDConfig.eps="
            f"{rates.cfg.eps!r}; build it with model.rates.cfg.schedule()"
        )


def vanilla_loss(
    model: nn.Module,
    x0: torch.Tensor,
    n_atoms: torch.Tensor,
    schedule: Schedule,
    *,
    max_atoms: int,
    t: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    sampling_eps: float = 1e-3,
) -> GraphLossOutput:
    """The element-agnostic masked-diffusion NELBO (MDLM) of graph rows, via `masked_diffusion`.

    Draws t (antithetic) then ``u = rand(x0.shape)`` (inside ``q_xt``) from `generator`.
    """
    V = vocab_of(model)
    check_graph_batch(x0, n_atoms, max_atoms, vocab=V)
    t = _times(x0, t, generator, sampling_eps)
    valid = valid_positions(n_atoms, max_atoms)
    x_t = torch.where(valid, q_xt(x0, t, schedule, V, generator=generator), x0)
    logits = model(x_t, t, n_atoms)
    terms = nelbo_terms(logits, x0, x_t, t, schedule) * valid
    loss = terms.sum() / valid.sum()
    return GraphLossOutput(loss, terms, t, x_t, logits, torch.ones_like(terms))


def _check_tau(tau: object) -> None:
    if isinstance(tau, bool) or not (isinstance(tau, (int, float)) and tau > 0):
        raise ValueError(f"tau: expected a number > 0, got {tau!r}")


def _uniforms(
    x0: torch.Tensor, u: torch.Tensor | None, generator: torch.Generator | None
) -> torch.Tensor:
    if u is None:
        return torch.rand(x0.shape, generator=generator, device=x0.device)
    if u.shape != x0.shape:
        raise ValueError(f"u: expected shape {tuple(x0.shape)}, got {tuple(u.shape)}")
    return u


def straight_through_mask(
    p: torch.Tensor, u: torch.Tensor, valid: torch.Tensor, tau: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Hard masks ``1[u < p]`` (batch, L) bool and their straight-through relaxation ``m``.

    ``m`` equals the hard mask in value; its gradient is that of the binary Gumbel-softmax
    ``sigmoid((logit p - logit u) / tau)``. Padding (``~valid``) is never masked.
    """
    hard = (u < p) & valid
    eps = 1e-6
    logit_p = torch.logit(p.clamp(eps, 1 - eps))
    soft = torch.sigmoid((logit_p - torch.logit(u.to(p.dtype).clamp(eps, 1 - eps))) / tau)
    m = (hard.to(p.dtype) + (soft - soft.detach())) * valid
    return hard, m


def _relaxed_input(x0: torch.Tensor, m: torch.Tensor, vocab: int) -> torch.Tensor:
    """``(1 - m) onehot(x0) + m onehot(mask)``: (batch, L, vocab + 1), the mask id = vocab."""
    onehot = F.one_hot(x0.long(), vocab + 1).to(m.dtype)
    mask_hot = F.one_hot(torch.full_like(x0, vocab).long(), vocab + 1).to(m.dtype)
    return (1.0 - m)[..., None] * onehot + m[..., None] * mask_hot


def _nll(logits: torch.Tensor, x0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    lp = logits if logits.dtype == torch.float64 else logits.float()
    logp = F.log_softmax(lp, dim=-1)
    return -logp.gather(-1, x0.long().unsqueeze(-1)).squeeze(-1), logp


GRADIENTS = ("st", "st-clean-ce", "score")


def _check_gradient(gradient: object) -> None:
    if gradient not in GRADIENTS:
        raise ValueError(f"gradient: expected one of {GRADIENTS}, got {gradient!r}")


def element_terms(
    hard: torch.Tensor,
    m: torch.Tensor,
    p: torch.Tensor,
    weight: torch.Tensor,
    nll: torch.Tensor,
    gradient: str,
) -> torch.Tensor:
    """The NELBO terms ``1[masked] w_i(t) CE_i`` (batch, L); `gradient` decides how they reach p.

    All three have the same value; they differ in the gradient of the mask indicator:

    - ``"st"`` (default): straight-through over the mask (``m``), with the MDM convention that
      an element that is still clean contributes exactly zero (MDLM's carry-over unmasking): its
      term is ``m * 0``, so neither its value nor its gradient involves its cross-entropy.
    - ``"st-clean-ce"`` (0.2.x, kept as an ablation): ``m * weight * CE`` for every element, so
      a clean element's straight-through gradient carries its cross-entropy ``CE_i`` -- a
      quantity the NELBO never contains and nothing trains (it multiplies a hard 0).
    - ``"score"`` (ours): the element's own term ``hard * weight * CE * p / sg(p)``, whose
      gradient ``hard * weight * CE / p`` is an unbiased estimate of ``d E[m_i c_i] / d p_i``
      (``c_i``, the cross-entropy of element i when masked, does not depend on ``m_i``); the
      denoiser still sees the straight-through input.
    """
    if gradient == "st-clean-ce":
        return m * weight * nll
    if gradient == "st":
        return m * weight * torch.where(hard, nll, torch.zeros_like(nll))
    ratio = p / p.detach().clamp_min(torch.finfo(p.dtype).tiny)
    return torch.where(hard, weight * nll * ratio, torch.zeros_like(nll))


def meld_loss(
    model: nn.Module,
    x0: torch.Tensor,
    n_atoms: torch.Tensor,
    schedule: ElementwiseSchedule,
    *,
    max_atoms: int,
    t: torch.Tensor | None = None,
    columns: torch.Tensor | None = None,
    u: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    sampling_eps: float = 1e-3,
    tau: float = 1.0,
    gradient: str = "st",
    recon: bool = False,
) -> GraphLossOutput:
    """MELD's NELBO (module docstring) for a `GraphMDM` with `ElementRates`.

    Draws, from `generator`: t (antithetic), the column assignment pi (``rand(batch, N_H)``,
    `ElementRates.columns`), then the mask uniforms ``u = rand(x0.shape)``, the draw
    ``masked_diffusion.q_xt`` makes. Pass `t`, `columns` (batch, max_atoms) or `u` to fix them.
    `tau` and `gradient` (`element_terms`: "st", "st-clean-ce" or "score") change gradients
    only, never the loss value.

    Times are drawn from ``[sampling_eps, 1]`` (MDLM's cut-off; the paper note states no time
    sampling), so per element the loss estimates ``(1 - eps) int_{delta^{w_i}}^1 CE(u) du``
    with ``delta = sampling_eps``, which goes to 0 as every rate goes to 0. ``recon=True``
    (ours, an option) adds the NELBO's reconstruction term at the cut-off, ``sum_i
    1[element i masked at delta] CE_i(g_delta)`` (one more denoiser call at ``t = delta``, with
    fresh mask uniforms drawn after ``u`` and the same `gradient`), so the loss is a bound on
    ``-log p(g | pi)`` for every rate: the continuous part on ``[delta, 1]`` plus one discrete
    step from ``delta`` to 0.

    Raises ValueError when max_atoms exceeds H's column count (naming N and the maximum).
    """
    V = vocab_of(model)
    check_graph_batch(x0, n_atoms, max_atoms, vocab=V)
    if not isinstance(schedule, ElementwiseSchedule):
        raise TypeError(f"schedule: expected an ElementwiseSchedule, got {type(schedule).__name__}")
    _check_tau(tau)
    _check_gradient(gradient)
    rates = _rates_of(model, ElementRates)
    check_columns(max_atoms, rates.cfg.n_columns)
    _check_eps(schedule, rates)
    t = _times(x0, t, generator, sampling_eps)
    if columns is None:
        columns = rates.columns(x0.shape[0], max_atoms, generator, x0.device)
    u = _uniforms(x0, u, generator)
    valid = valid_positions(n_atoms, max_atoms)
    w = rates(columns)
    p = schedule.mask_prob(t, w)
    hard, m = straight_through_mask(p, u, valid, tau)
    x_t = torch.where(hard, torch.full_like(x0, V), x0)
    logits = model(_relaxed_input(x0, m, V), t, n_atoms, rates.embeddings(columns))
    check_logits(logits, x_t, V)
    nll, _ = _nll(logits, x0)
    weight = schedule.weight(t.to(nll.dtype), w.to(nll.dtype))
    terms = element_terms(hard, m.to(nll.dtype), p.to(nll.dtype), weight, nll, gradient)
    if recon:
        terms = terms + _recon_terms(
            model, x0, n_atoms, schedule, w, columns, valid, generator, sampling_eps, tau, gradient
        )
    loss = terms.sum() / valid.sum()
    return GraphLossOutput(loss, terms, t, x_t, logits, w, columns)


def _recon_terms(
    model: nn.Module,
    x0: torch.Tensor,
    n_atoms: torch.Tensor,
    schedule: ElementwiseSchedule,
    w: torch.Tensor,
    columns: torch.Tensor,
    valid: torch.Tensor,
    generator: torch.Generator | None,
    sampling_eps: float,
    tau: float,
    gradient: str,
) -> torch.Tensor:
    """The reconstruction terms at ``t = delta = sampling_eps``: ``1[masked] CE`` (batch, L)."""
    if not (isinstance(sampling_eps, float) and 0.0 < sampling_eps < 1.0):
        raise ValueError(
            f"sampling_eps: recon=True needs a cut-off in (0, 1), got {sampling_eps!r}"
        )
    rates = _rates_of(model, ElementRates)
    t_d = torch.full((x0.shape[0],), sampling_eps, device=x0.device)
    u = torch.rand(x0.shape, generator=generator, device=x0.device)
    p = schedule.mask_prob(t_d, w)
    hard, m = straight_through_mask(p, u, valid, tau)
    logits = model(_relaxed_input(x0, m, vocab_of(model)), t_d, n_atoms, rates.embeddings(columns))
    nll, _ = _nll(logits, x0)
    ones = torch.ones_like(nll)
    return element_terms(hard, m.to(nll.dtype), p.to(nll.dtype), ones, nll, gradient)


def class_loss(
    model: nn.Module,
    x0: torch.Tensor,
    n_atoms: torch.Tensor,
    schedule: ElementwiseSchedule,
    *,
    max_atoms: int,
    t: torch.Tensor | None = None,
    u: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    sampling_eps: float = 1e-3,
    tau: float = 1.0,
    gradient: str = "st",
) -> GraphLossOutput:
    """The class-level (GenMD4) NELBO for a `GraphMDM` with `ClassRates`.

    With value-dependent rates the reverse step is the factorised posterior's mixture, and the
    continuous-time NELBO of a masked element whose clean value is j is (the path-KL of the
    reverse jump rates ``omega_k mu_k`` against ``omega_j 1[k = j]``)

        omega_j (-log mu_j) + sum_k omega_k mu_k - omega_j,   omega_k = -gamma_k'(t)/(1-gamma_k(t)),

    with ``mu = softmax(logits)``; it is MELD's term when every ``omega_k`` is equal. Draws t then
    ``u = rand(x0.shape)`` from `generator`. `gradient` is `element_terms`'s, applied to this
    term: ``"st"`` (default, 0.4.0) lets a still-clean element contribute exactly zero, value and
    gradient (MDM's carry-over, as in `meld_loss`); ``"st-clean-ce"`` is 0.3.x's
    ``m * term`` for every element, whose straight-through gradient carries the clean elements'
    untrained term; ``"score"`` the own-term estimator. All three have the same loss value.
    """
    V = vocab_of(model)
    check_graph_batch(x0, n_atoms, max_atoms, vocab=V)
    if not isinstance(schedule, ElementwiseSchedule):
        raise TypeError(f"schedule: expected an ElementwiseSchedule, got {type(schedule).__name__}")
    _check_tau(tau)
    _check_gradient(gradient)
    rates = _rates_of(model, ClassRates)
    t = _times(x0, t, generator, sampling_eps)
    u = _uniforms(x0, u, generator)
    valid = valid_positions(n_atoms, max_atoms)
    b, L = x0.shape
    table = rates(max_atoms).expand(b, L, V)  # rates by position and clean value
    w = table.gather(-1, x0.long().unsqueeze(-1)).squeeze(-1)
    p = schedule.mask_prob(t, w)
    hard, m = straight_through_mask(p, u, valid, tau)
    x_t = torch.where(hard, torch.full_like(x0, V), x0)
    logits = model(_relaxed_input(x0, m, V), t, n_atoms)
    check_logits(logits, x_t, V)
    nll, logp = _nll(logits, x0)
    tt = t.to(nll.dtype)
    omega = schedule.weight(tt, table.reshape(b, -1).to(nll.dtype)).view(b, L, V)
    omega_j = omega.gather(-1, x0.long().unsqueeze(-1)).squeeze(-1)
    own = omega_j * nll + (omega * logp.exp()).sum(-1) - omega_j
    terms = element_terms(
        hard, m.to(nll.dtype), p.to(nll.dtype), torch.ones_like(own), own, gradient
    )
    loss = terms.sum() / valid.sum()
    return GraphLossOutput(loss, terms, t, x_t, logits, w)


def _start(n_atoms: torch.Tensor, max_atoms: int, vocab: int) -> torch.Tensor:
    valid = valid_positions(n_atoms, max_atoms)
    return torch.where(valid, vocab, 0).long()


def _check_sampler(n_atoms: object, max_atoms: int, steps: object, temperature: float) -> None:
    if not isinstance(n_atoms, torch.Tensor) or n_atoms.ndim != 1 or n_atoms.numel() == 0:
        raise ValueError(
            f"n_atoms: expected a non-empty (batch,) tensor of atom counts, got {n_atoms!r:.60}"
        )
    if int(n_atoms.min()) < 1 or int(n_atoms.max()) > max_atoms:
        raise ValueError(
            f"n_atoms: expected counts in [1, {max_atoms}], got {n_atoms.tolist()[:8]}"
        )
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps: expected a positive int, got {steps!r}")
    if not temperature > 0:
        raise ValueError(f"temperature: expected > 0, got {temperature!r}")


def _sample(
    denoiser: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    n_atoms: torch.Tensor,
    max_atoms: int,
    steps: int,
    schedule: Schedule,
    generator: torch.Generator | None,
    temperature: float,
    unmask_prob: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor] | None,
    vocab: int,
) -> torch.Tensor:
    return ancestral_sample(
        denoiser,
        vocab_size=vocab,
        steps=steps,
        schedule=schedule,
        temperature=temperature,
        generator=generator,
        x_init=_start(n_atoms, max_atoms, vocab),
        device=n_atoms.device,
        unmask_prob=unmask_prob,
    )


@torch.no_grad()
def vanilla_sample(
    model: nn.Module,
    n_atoms: torch.Tensor,
    *,
    max_atoms: int,
    steps: int,
    schedule: Schedule,
    generator: torch.Generator | None = None,
    temperature: float = 1.0,
) -> torch.Tensor:
    """Graph rows (batch, L) from `masked_diffusion.ancestral_sample` (padding held fixed)."""
    _check_sampler(n_atoms, max_atoms, steps, temperature)
    return _sample(
        lambda x, t: model(x, t, n_atoms), n_atoms, max_atoms, steps, schedule, generator,
        temperature, None, vocab_of(model),
    )  # fmt: skip


@torch.no_grad()
def meld_sample(
    model: nn.Module,
    n_atoms: torch.Tensor,
    *,
    max_atoms: int,
    steps: int,
    schedule: ElementwiseSchedule,
    generator: torch.Generator | None = None,
    temperature: float = 1.0,
    columns: torch.Tensor | None = None,
) -> torch.Tensor:
    """MELD's exact ancestral sampler: rows (batch, L).

    Draws pi (`ElementRates.columns`, from `generator`) unless `columns` is given, reads every
    element's rate from H, and runs ``masked_diffusion.ancestral_sample`` with the per-element
    unmasking probability ``(gamma_i(s) - gamma_i(t)) / (1 - gamma_i(t))``; the denoiser sees
    the same embeddings as in training.
    """
    _check_sampler(n_atoms, max_atoms, steps, temperature)
    rates = _rates_of(model, ElementRates)
    check_columns(max_atoms, rates.cfg.n_columns)
    if not isinstance(schedule, ElementwiseSchedule):
        raise TypeError(f"schedule: expected an ElementwiseSchedule, got {type(schedule).__name__}")
    _check_eps(schedule, rates)
    if columns is None:
        columns = rates.columns(n_atoms.shape[0], max_atoms, generator, n_atoms.device)
    w, pos = rates(columns), rates.embeddings(columns)
    return _sample(
        lambda x, t: model(x, t, n_atoms, pos), n_atoms, max_atoms, steps, schedule.base,
        generator, temperature, lambda x, t, s: schedule.unmask_prob(t, s, w).float(),
        vocab_of(model),
    )  # fmt: skip


@torch.no_grad()
def class_sample(
    model: nn.Module,
    n_atoms: torch.Tensor,
    *,
    max_atoms: int,
    steps: int,
    schedule: ElementwiseSchedule,
    generator: torch.Generator | None = None,
    temperature: float = 1.0,
) -> torch.Tensor:
    """The class-level schedule's exact ancestral sampler (per-value unmask probabilities)."""
    _check_sampler(n_atoms, max_atoms, steps, temperature)
    rates = _rates_of(model, ClassRates)
    b = n_atoms.shape[0]
    table = rates(max_atoms).reshape(1, -1).expand(b, -1)  # (b, L * V)

    def unmask(x: torch.Tensor, t: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return schedule.unmask_prob(t, s, table).view(b, -1, V).float()

    V = vocab_of(model)
    return _sample(
        lambda x, t: model(x, t, n_atoms), n_atoms, max_atoms, steps, schedule.base, generator,
        temperature, unmask, V,
    )  # fmt: skip


def graph_loss_fn(
    schedule: ElementwiseSchedule,
    max_atoms: int,
    *,
    tau: float = 1.0,
    sampling_eps: float = 1e-3,
    gradient: str = "st",
    recon: bool = False,
) -> Callable[[nn.Module, dict[str, object]], tuple[torch.Tensor, dict[str, float]]]:
    """``loss_fn(model, batch)`` for `shared_core.train.fit` and `masked_diffusion.row_batches`.

    `model` is a `GraphMDM`; the batch's ``x0`` holds graph rows with the atom count appended as
    a last column (`with_counts`). Rates None trains vanilla MDM on ``schedule.base``;
    `ElementRates` MELD and `ClassRates` the class-level schedule (`gradient`: `element_terms`,
    for both; `recon`: `meld_loss`'s, MELD only).
    Noise comes from ``masked_diffusion.noise_generator``.
    """
    from masked_diffusion import noise_generator

    _check_gradient(gradient)

    def loss_fn(
        model: nn.Module, batch: dict[str, object]
    ) -> tuple[torch.Tensor, dict[str, float]]:
        data = batch["x0"]
        assert isinstance(data, torch.Tensor)
        x0, n_atoms = data[:, :-1], data[:, -1]
        g = noise_generator(batch, data.device)
        rates = getattr(getattr(model, "module", model), "rates", None)
        kw = {"max_atoms": max_atoms, "generator": g, "sampling_eps": sampling_eps}
        if rates is None:
            return vanilla_loss(model, x0, n_atoms, schedule.base, **kw).loss, {}  # type: ignore[arg-type]
        if isinstance(rates, ElementRates):
            out = meld_loss(
                model,
                x0,
                n_atoms,
                schedule,
                tau=tau,
                gradient=gradient,
                recon=recon,
                **kw,  # type: ignore[arg-type]
            )
        else:
            out = class_loss(model, x0, n_atoms, schedule, tau=tau, gradient=gradient, **kw)  # type: ignore[arg-type]
        log_w = out.w.detach().log()[valid_positions(n_atoms, max_atoms)]
        return out.loss, {"log_w_mean": float(log_w.mean()), "log_w_std": float(log_w.std())}

    return loss_fn


def with_counts(rows: torch.Tensor, n_atoms: torch.Tensor) -> torch.Tensor:
    """Rows (n, L) with the atom counts appended as column L: the training tensor of `graph_loss_fn`."""
    return torch.cat([rows, n_atoms[:, None].to(rows.dtype)], dim=1)
