"""Console script: ``masked-diffusion reproduce`` (MDLM on char-level Shakespeare, tiny scale)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from masked_diffusion import __version__
from masked_diffusion.backbone import BackboneConfig, MaskedDiffusionTransformer
from masked_diffusion.data import shakespeare_chars
from masked_diffusion.loss import mdlm_loss, nelbo
from masked_diffusion.sampling import ancestral_sample, confidence_sample
from masked_diffusion.schedule import LogLinearSchedule
from masked_diffusion.train import TrainConfig, train
from shared_core.cli import ReproduceArgs, make_main, reproduce_command
from shared_core.device import seed_everything
from shared_core.distributed import init_distributed
from shared_core.metrics import bits_per_dim, unigram_cross_entropy, unigram_entropy
from shared_core.report import Run


@dataclass(frozen=True)
class ReproduceConfig:
    """One scale of the reproduction; `tiny` runs in about 2-3 minutes on 2 CPU cores."""

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


SCALES = {
    "tiny": ReproduceConfig(),
    "small": ReproduceConfig(
        seq_len=128,
        plays=None,
        d_model=256,
        n_heads=8,
        n_layers=6,
        steps=5000,
        batch_size=64,
        lr=1e-3,
        warmup=200,
        eval_rows=2048,
        eval_samples=8,
        n_generate=64,
        sample_steps=(16, 64, 128),
    ),
    "paper": ReproduceConfig(
        seq_len=256,
        plays=None,
        d_model=768,
        n_heads=12,
        n_layers=12,
        steps=100_000,
        batch_size=512,
        lr=3e-4,
        warmup=2500,
        eval_rows=8192,
        eval_samples=16,
        n_generate=256,
        sample_steps=(32, 128, 256),
    ),
}


def run_reproduce(args: ReproduceArgs) -> int:
    cfg = SCALES[args.scale]
    seed_everything(args.seed)
    info = init_distributed(args.device)
    data = shakespeare_chars(seq_len=cfg.seq_len, plays=cfg.plays, seed=args.seed)
    v = data.vocab_size
    schedule = LogLinearSchedule()
    model = MaskedDiffusionTransformer(
        BackboneConfig(v, cfg.seq_len, cfg.d_model, cfg.n_heads, cfg.n_layers)
    )

    def loss_fn(m: torch.nn.Module, batch: torch.Tensor, g: torch.Generator) -> torch.Tensor:
        return mdlm_loss(lambda x, t: m(x, t), batch, schedule, v, generator=g).loss

    tc = TrainConfig(
        steps=cfg.steps,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        warmup=cfg.warmup,
        seed=args.seed,
        device=args.device,
    )
    run = Run(
        "masked-diffusion",
        {"scale": args.scale, **cfg.__dict__},
        out=args.out,
        enabled=info.is_main,
    )
    t0 = time.time()
    result = train(model, loss_fn, data.train, tc, info=info)
    train_s = time.time() - t0
    dev = info.device
    val = data.val[: cfg.eval_rows].to(dev)
    val_nats = nelbo(
        lambda x, t: model(x, t), val, schedule, v, n_samples=cfg.eval_samples, seed=args.seed
    )
    uni_bits = unigram_cross_entropy(data.train, data.val[: cfg.eval_rows], v)
    data_entropy = unigram_entropy(data.train, v)
    run.add_row(
        "nelbo",
        model="MDLM (NELBO upper bound)",
        val_bits_per_char=bits_per_dim(val_nats),
        params=sum(p.numel() for p in model.parameters()),
    )
    run.add_row("nelbo", model="unigram baseline", val_bits_per_char=uni_bits, params=v)
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
            g = torch.Generator(device=dev).manual_seed(args.seed)
            t1 = time.time()
            x = sampler(
                vocab_size=v,
                steps=steps,
                batch_size=cfg.n_generate,
                seq_len=cfg.seq_len,
                generator=g,
                device=dev,
            )
            dt = time.time() - t1
            run.add_row(
                "samples",
                sampler=name,
                steps=steps,
                unigram_entropy_bits=unigram_entropy(x.cpu(), v),
                data_entropy_bits=data_entropy,
                tokens_per_s=x.numel() / dt,
            )
            if steps == cfg.sample_steps[-1]:
                run.log(**{f"sample {name}": data.decode(x[0].cpu())})
    losses = result.losses
    run.plot(
        "train_loss",
        {"MDLM NELBO (nats/char)": (list(range(1, len(losses) + 1)), losses)},
        xlabel="step",
        ylabel="loss (nats/char)",
        logy=True,
    )
    run.log(
        val_nelbo_nats=val_nats,
        val_bits_per_char=bits_per_dim(val_nats),
        unigram_bits_per_char=uni_bits,
        train_seconds=train_s,
        final_train_loss=float(sum(losses[-20:]) / len(losses[-20:])),
    )
    run.finish(
        title="masked-diffusion reproduce: MDLM on char-level Shakespeare",
        notes=(
            "Validation NELBO (an upper bound on NLL) in bits per character versus a unigram "
            "model fit on the training split. Samples: unigram entropy of generated characters "
            "(the data's unigram entropy beside it) and throughput."
        ),
    )
    if math.isnan(val_nats):
        raise ValueError("val_nelbo: training diverged (NaN)")
    return 0


main = make_main(
    "masked-diffusion",
    __version__,
    [reproduce_command(run_reproduce, scales=tuple(SCALES))],
    description="MDLM masked diffusion baseline (Sahoo et al. 2024).",
)
