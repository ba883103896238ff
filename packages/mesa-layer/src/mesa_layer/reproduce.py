"""``mesa-layer reproduce``: regression, MQAR and char-LM at a chosen scale, into one run report."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

from mesa_layer.experiments import lm, mqar, regression
from mesa_layer.experiments.common import LABELS
from mesa_layer.train import TrainConfig
from shared_core.cli import ReproduceArgs


@dataclass
class ReproduceConfig:
    """All three experiments; ``scale`` picks the sizes (tiny: a few minutes on 2 CPU cores)."""

    regression: regression.RegressionConfig = field(default_factory=regression.RegressionConfig)
    mqar: mqar.MQARConfig = field(default_factory=mqar.MQARConfig)
    lm: lm.LMConfig = field(default_factory=lm.LMConfig)
    threads: int = 1


def config_for(scale: str) -> ReproduceConfig:
    if scale == "tiny":
        return ReproduceConfig()
    if scale == "small":  # a GPU or a free multi-core CPU: ~10x the tiny budget
        return ReproduceConfig(
            regression=regression.RegressionConfig(
                batch_size=64, num_layers=2, train=TrainConfig(steps=1500, warmup=50)
            ),
            mqar=mqar.MQARConfig(
                vocab_size=256,
                seq_len=128,
                kv_pairs=(4, 8, 16, 32),
                train_examples=65536,
                batch_size=64,
                train=TrainConfig(steps=3000, warmup=100),
            ),
            lm=lm.LMConfig(
                seq_len=256,
                batch_size=32,
                hidden_size=128,
                train=TrainConfig(steps=3000, lr=2e-3, warmup=100),
            ),
            threads=0,
        )
    if scale == "paper":  # the paper's regime needs GPUs and far larger models; sizes to start from
        return ReproduceConfig(
            regression=regression.RegressionConfig(
                batch_size=256,
                num_layers=2,
                hidden_size=256,
                cg_steps_train=30,
                train=TrainConfig(steps=20000, lr=1e-3, warmup=1000),
            ),
            mqar=mqar.MQARConfig(
                vocab_size=8192,
                seq_len=512,
                kv_pairs=(16, 32, 64, 128),
                train_examples=100_000,
                batch_size=256,
                hidden_size=256,
                num_heads=4,
                intermediate_size=512,
                cg_steps_train=30,
                train=TrainConfig(steps=20000, lr=1e-3, warmup=1000),
            ),
            lm=lm.LMConfig(
                max_chars=10**9,
                seq_len=1024,
                batch_size=64,
                hidden_size=512,
                num_layers=8,
                num_heads=4,
                intermediate_size=1408,
                cg_steps_train=30,
                eval_cg_steps=(1, 2, 4, 8, 16, 30, 64),
                train=TrainConfig(steps=50000, lr=1e-3, warmup=2000),
            ),
            threads=0,
        )
    raise ValueError(f"scale: expected 'tiny', 'small' or 'paper', got {scale!r}")


def reproduce(args: ReproduceArgs) -> int:
    import torch

    from shared_core.device import seed_everything
    from shared_core.distributed import init_distributed, is_main
    from shared_core.report import Run

    cfg = config_for(args.scale)
    info = init_distributed(args.device)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    seed_everything(args.seed)
    run = Run(
        "mesa-layer",
        {"scale": args.scale, "seed": args.seed, **dataclasses.asdict(cfg)},
        out=args.out,
        enabled=is_main(),
    )
    timings = {}

    t0 = time.time()
    reg = regression.run(cfg.regression, seed=args.seed, device=info.device)
    timings["regression_s"] = time.time() - t0
    d = cfg.regression.d
    for method, err in reg["mse"].items():
        run.add_row(
            "in-context regression (MSE of y_t; Var y ~ 1)",
            method=LABELS[method],
            **{
                "t<=d": float(sum(err[1 : d + 1]) / d),
                "t>d": float(sum(err[d + 1 :]) / len(err[d + 1 :])),
                "t=T": err[-1],
            },
        )
    for method, err in reg["constructed"].items():
        run.add_row(
            "in-context regression (MSE of y_t; Var y ~ 1)",
            method=f"{LABELS[method]}, constructed weights",
            **{
                "t<=d": float(sum(err[1 : d + 1]) / d),
                "t>d": float(sum(err[d + 1 :]) / len(err[d + 1 :])),
                "t=T": err[-1],
            },
        )
    orc = reg["oracle"]
    run.add_row(
        "in-context regression (MSE of y_t; Var y ~ 1)",
        method="ridge oracle",
        **{
            "t<=d": float(sum(orc[1 : d + 1]) / d),
            "t>d": float(sum(orc[d + 1 :]) / len(orc[d + 1 :])),
            "t=T": orc[-1],
        },
    )
    positions = list(range(cfg.regression.T))
    series = {f"{LABELS[m]} (trained)": (positions, e) for m, e in reg["mse"].items()}
    series.update(
        {
            f"{LABELS[m]} (constructed)": (positions, e)
            for m, e in reg["constructed"].items()
            if m != "mesa"
        }
    )
    series["ridge oracle = Mesa (constructed)"] = (positions, orc)
    run.plot(
        "regression_error_vs_position",
        series,
        xlabel="position t (examples seen)",
        ylabel="MSE",
        logy=True,
    )

    t0 = time.time()
    rec = mqar.run(cfg.mqar, seed=args.seed, device=info.device)
    timings["mqar_s"] = time.time() - t0
    for method, accs in rec["accuracy"].items():
        run.add_row(
            "MQAR accuracy",
            method=LABELS[method],
            **{f"{k} kv": a for k, a in zip(rec["kv_pairs"], accs, strict=False)},
        )
    run.plot(
        "mqar_accuracy_vs_kv_pairs",
        {LABELS[m]: (rec["kv_pairs"], a) for m, a in rec["accuracy"].items()},
        xlabel="number of key-value pairs",
        ylabel="query accuracy",
    )

    t0 = time.time()
    lmr = lm.run(cfg.lm, seed=args.seed, device=info.device)
    timings["lm_s"] = time.time() - t0
    for method, loss in lmr["val_loss"].items():
        run.add_row(
            "char-LM on Shakespeare (validation)",
            method=LABELS[method],
            nats_per_char=loss,
            bits_per_char=loss / 0.6931471805599453,
        )

    for s, v in lmr["cg_sweep"]:
        run.add_row(
            "MesaNet vs inference-time CG steps",
            cg_steps=s,
            lm_val_loss=v,
            **{"regression_mse_t>d": dict(reg["cg_sweep"]).get(s, float("nan"))},
        )
    run.plot(
        "loss_vs_cg_steps",
        {
            "char-LM val loss": tuple(zip(*lmr["cg_sweep"], strict=False)),
            "regression MSE (t>d)": tuple(zip(*reg["cg_sweep"], strict=False)),
        },
        xlabel="CG steps at inference",
        ylabel="loss",
        logy=True,
    )
    run.log(**timings, regression=reg, mqar=rec, lm=lmr)
    run.finish(title="mesa-layer reproduce: MesaNet vs GLA, DeltaNet and softmax attention")
    return 0
