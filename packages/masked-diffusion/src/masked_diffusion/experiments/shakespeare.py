"""MDLM on char-level Shakespeare: its NELBO beats a unigram model, and how samplers trade diversity.

One model is trained (`shared_core.train.fit` with MDLM's optimiser: linear warm-up then a
constant learning rate, no weight decay, AdamW's default betas). Reported: the validation NELBO
in bits/char beside a unigram model fit on the training split, and, for the ancestral and
MaskGIT-confidence samplers at several step counts, the unigram entropy of the samples
(beside the data's) and their throughput.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

from shared_core.cli import ReproduceArgs
from shared_core.progress import phase, plan
from shared_core.train import TrainConfig

# This module is imported by the CLI for SCALES: torch and the models are imported in `run`.


@dataclass(frozen=True)
class ShakespeareConfig:
    """One scale of the run; the defaults are `tiny` (`ESTIMATE_S["tiny"]` CPU seconds, one thread)."""

    seq_len: int = 64
    plays: int | None = 4
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 3
    steps: int = 600
    batch_size: int = 32
    lr: float = 3e-3
    warmup: int = 25
    eval_rows: int = 128
    eval_samples: int = 4
    n_generate: int = 16
    sample_steps: tuple[int, ...] = (8, 32, 64)

    def train_config(self) -> TrainConfig:
        """MDLM's optimiser: linear warm-up, then a constant rate; no weight decay."""
        from masked_diffusion.loss import mdlm_train_config

        return mdlm_train_config(self.steps, lr=self.lr, warmup=self.warmup)


SCALES: dict[str, ShakespeareConfig] = {
    "micro": ShakespeareConfig(
        seq_len=32, plays=1, d_model=32, n_heads=2, n_layers=1, steps=20, batch_size=8,
        warmup=5, eval_rows=16, eval_samples=1, n_generate=2, sample_steps=(2, 4),
    ),
    "tiny": ShakespeareConfig(),
    "small": ShakespeareConfig(
        seq_len=128, plays=None, d_model=128, n_heads=4, n_layers=3, steps=2000, batch_size=32,
        lr=3e-3, warmup=50, eval_rows=512, eval_samples=4, n_generate=32,
        sample_steps=(8, 32, 128),
    ),
    "paper": ShakespeareConfig(
        seq_len=256, plays=None, d_model=768, n_heads=12, n_layers=12, steps=100_000,
        batch_size=512, lr=3e-4, warmup=2500, eval_rows=8192, eval_samples=16, n_generate=256,
        sample_steps=(32, 128, 256),
    ),
}  # fmt: skip


# CPU seconds per scale: the heartbeat's ETA and the costs `--help` prints: `cpu_s` of the
# committed results/tiny.json and results/small.json (one thread each).
ESTIMATE_S = {"micro": 10.0, "tiny": 95.0, "small": 644.0}


def run(args: ReproduceArgs) -> int:
    """Train, evaluate and sample one MDLM; write the report under ``args.out``."""
    import torch

    from masked_diffusion.backbone import BackboneConfig, MaskedDiffusionTransformer
    from masked_diffusion.data import row_batches, shakespeare_chars
    from masked_diffusion.loss import mdlm_loss_fn, nelbo
    from masked_diffusion.sampling import ancestral_sample, confidence_sample
    from masked_diffusion.schedule import LogLinearSchedule
    from shared_core.device import seed_everything
    from shared_core.distributed import init_distributed
    from shared_core.metrics import bits_per_dim, unigram_cross_entropy, unigram_entropy
    from shared_core.report import Run
    from shared_core.train import fit

    cfg: ShakespeareConfig = args.config
    seed_everything(args.seed)
    info = init_distributed(args.device)
    data = shakespeare_chars(seq_len=cfg.seq_len, plays=cfg.plays, seed=args.seed)
    plan(["train MDLM", "validation NELBO", "sample", "report"], ESTIMATE_S.get(args.scale))
    v = data.vocab_size
    schedule = LogLinearSchedule()
    model = MaskedDiffusionTransformer(
        BackboneConfig(v, cfg.seq_len, cfg.d_model, cfg.n_heads, cfg.n_layers)
    )
    report = Run("masked-diffusion", asdict(cfg), out=args.out, enabled=info.is_main)
    phase("train MDLM")
    t0 = time.time()
    result = fit(
        model, mdlm_loss_fn(schedule, v), row_batches(data.train, cfg.batch_size, args.seed),
        cfg.train_config(), desc="mdlm train", info=info,
    )  # fmt: skip
    train_s = time.time() - t0
    phase("validation NELBO")
    dev = info.device
    val = data.val[: cfg.eval_rows].to(dev)
    val_nats = nelbo(
        lambda x, t: model(x, t), val, schedule, v, n_samples=cfg.eval_samples, seed=args.seed
    )
    uni_bits = unigram_cross_entropy(data.train, data.val[: cfg.eval_rows], v)
    data_entropy = unigram_entropy(data.train, v)
    report.add_row(
        "nelbo", model="MDLM (NELBO)", val_bits_per_char=bits_per_dim(val_nats),
        params=sum(p.numel() for p in model.parameters()),
    )  # fmt: skip
    report.add_row("nelbo", model="unigram baseline", val_bits_per_char=uni_bits, params=v)
    phase("sample")
    denoise = lambda x, t: model(x, t)  # noqa: E731
    samplers = {
        "ancestral": lambda **kw: ancestral_sample(denoise, **kw),
        "confidence (greedy)": lambda **kw: confidence_sample(denoise, **kw),
        "confidence (Gumbel 4.5)": lambda **kw: confidence_sample(
            denoise, choice_temperature=4.5, **kw
        ),
    }
    for name, sampler in samplers.items():
        for steps in cfg.sample_steps:
            print(f"mdlm sample {name} steps={steps}", flush=True)
            g = torch.Generator(device=dev).manual_seed(args.seed)
            t1 = time.time()
            x = sampler(
                vocab_size=v, steps=steps, batch_size=cfg.n_generate, seq_len=cfg.seq_len,
                generator=g, device=dev,
            )  # fmt: skip
            dt = time.time() - t1
            report.add_row(
                "samples", sampler=name, steps=steps,
                unigram_entropy_bits=unigram_entropy(x.cpu(), v),
                data_entropy_bits=data_entropy, tokens_per_s=x.numel() / dt,
            )  # fmt: skip
            if steps == cfg.sample_steps[-1]:
                report.log(**{f"sample {name}": data.decode(x[0].cpu())})
    phase("report")
    losses = result.losses
    report.plot(
        "train_loss", {"MDLM NELBO (nats/char)": (list(range(1, len(losses) + 1)), losses)},
        xlabel="step", ylabel="loss (nats/char)", logy=True,
    )  # fmt: skip
    tail = losses[-20:]
    report.log(
        val_nelbo_nats=val_nats, val_bits_per_char=bits_per_dim(val_nats),
        val_bits_per_char_stderr=bits_per_dim(val_nats.stderr),
        unigram_bits_per_char=uni_bits, train_seconds=train_s,
        final_train_loss=float(sum(tail) / len(tail)),
    )  # fmt: skip
    if math.isnan(val_nats):
        report.fail("val_nelbo: training diverged (NaN)")
        raise FloatingPointError("val_nelbo: training diverged (NaN)")
    report.finish(
        title="masked-diffusion reproduce: MDLM on char-level Shakespeare",
        notes=(
            "Validation NELBO in bits per character (the MDLM estimator with t in [1e-3, 1]; see "
            "the README for how it relates to the NLL) versus a unigram model fit on the "
            "training split. Samples: unigram entropy of generated characters (the data's "
            "unigram entropy beside it) and throughput."
        ),
    )
    return 0
