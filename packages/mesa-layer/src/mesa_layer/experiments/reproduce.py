"""``mesa-layer reproduce``: regression, MQAR and char-LM at a chosen scale, into one run report."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from mesa_layer.experiments import lm, mqar, regression
from mesa_layer.experiments.common import LABELS, train_config
from mesa_layer.experiments.costs import ESTIMATE_S
from shared_core.cli import ReproduceArgs
from shared_core.progress import phase, plan


@dataclass
class ReproduceConfig:
    """All three experiments at one scale (`SCALES`)."""

    regression: regression.RegressionConfig = field(default_factory=regression.RegressionConfig)
    mqar: mqar.MQARConfig = field(default_factory=mqar.MQARConfig)
    lm: lm.LMConfig = field(default_factory=lm.LMConfig)


_MICRO_MODEL: dict[str, Any] = {
    "hidden_size": 16,
    "num_layers": 1,
    "num_heads": 2,
    "intermediate_size": 32,
    "cg_steps_train": 2,
}

SCALES: dict[str, ReproduceConfig] = {
    # every code path end to end in seconds (CI): 3 steps per model, toy sizes
    "micro": ReproduceConfig(
        regression=regression.RegressionConfig(
            d=4,
            T=16,
            batch_size=4,
            eval_batch=8,
            eval_cg_steps=(1, 2),
            train=train_config(3, warmup=1),
            **_MICRO_MODEL,
        ),
        mqar=mqar.MQARConfig(
            vocab_size=64,
            seq_len=32,
            kv_pairs=(2, 4),
            train_examples=64,
            test_examples=16,
            batch_size=4,
            eval_cg_steps=(0, 2),
            train=train_config(3, warmup=1),
            **_MICRO_MODEL,
        ),
        lm=lm.LMConfig(
            max_chars=20_000,
            seq_len=16,
            batch_size=4,
            eval_batches=1,
            eval_batch_size=4,
            eval_cg_steps=(0, 2),
            train=train_config(3, warmup=1),
            **_MICRO_MODEL,
        ),
    ),
    # the headline comparison in a few minutes on 2 CPU cores (one thread)
    "tiny": ReproduceConfig(),
    # Zoology's MQAR scaled down (T = 128, vocab 256, 4-32 pairs, 800 steps) plus somewhat
    # longer regression and char-LM runs: ~17 CPU-minutes with one thread (README)
    "small": ReproduceConfig(
        regression=regression.RegressionConfig(
            batch_size=32, num_layers=2, train=train_config(200, lr=1e-2, warmup=10)
        ),
        mqar=mqar.MQARConfig(
            vocab_size=256,
            seq_len=128,
            kv_pairs=(4, 8, 16, 32),
            train_examples=16384,
            test_examples=256,
            batch_size=32,
            eval_cg_steps=(0, 1, 2, 4, 8, 16, 32),
            train=train_config(800, warmup=40),
        ),
        lm=lm.LMConfig(seq_len=128, batch_size=16, train=train_config(200, warmup=15)),
    ),
    # the paper's regime needs GPUs and far larger models; sizes to start from
    "paper": ReproduceConfig(
        regression=regression.RegressionConfig(
            batch_size=256,
            num_layers=2,
            hidden_size=256,
            cg_steps_train=30,
            train=train_config(20000, lr=1e-3, warmup=1000),
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
            train=train_config(20000, lr=1e-3, warmup=1000),
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
            train=train_config(50000, lr=1e-3, warmup=2000),
        ),
    ),
}


def reproduce(args: ReproduceArgs) -> int:
    """Run the three experiments of ``args.config`` and write one report (rank 0)."""
    from mesa_layer.data import require_shakespeare
    from shared_core.device import seed_everything
    from shared_core.distributed import init_distributed
    from shared_core.report import Run

    cfg: ReproduceConfig = args.config
    require_shakespeare()  # fail before the first experiment, not after it
    plan(["in-context regression", "MQAR", "char-LM", "report"], ESTIMATE_S.get(args.scale))
    info = init_distributed(args.device)
    device = str(info.device)
    seed_everything(args.seed)
    run = Run(
        "mesa-layer",
        {"scale": args.scale, "seed": args.seed, **dataclasses.asdict(cfg)},
        out=args.out,
        enabled=info.is_main,
    )
    timings = {}

    phase("in-context regression")
    t0 = time.time()
    reg = regression.run(cfg.regression, seed=args.seed, device=device)
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

    phase("MQAR")
    t0 = time.time()
    rec = mqar.run(cfg.mqar, seed=args.seed, device=device)
    timings["mqar_s"] = time.time() - t0
    kv = rec["kv_pairs"]
    mqar_table = "MQAR query accuracy (one model per mixer, trained on the mixture of pair counts)"
    for method, accs in rec["accuracy"].items():
        run.add_row(
            mqar_table,
            method=LABELS[method],
            **{f"{k} kv": a for k, a in zip(kv, accs, strict=True)},
            mean=sum(accs) / len(accs),
        )
    run.plot(
        "mqar_accuracy_vs_kv_pairs",
        {LABELS[m]: (kv, accs) for m, accs in rec["accuracy"].items()},
        xlabel="number of key-value pairs (log scale)",
        ylabel="query accuracy",
        title="MQAR: recall against the number of pairs",
        logx=True,
        xticks=kv,
    )
    if rec["cg_sweep"]:
        sweep = {int(k): v for k, v in rec["cg_sweep"].items()}
        steps = [s for s, _ in sweep[kv[0]]]
        for i, s in enumerate(steps):
            accs_s = [sweep[k][i][1] for k in kv]
            run.add_row(
                f"MesaNet MQAR accuracy vs inference-time CG steps "
                f"(trained with {cfg.mqar.cg_steps_train})",
                cg_steps=s,
                **{f"{k} kv": a for k, a in zip(kv, accs_s, strict=True)},
                mean=sum(accs_s) / len(accs_s),
            )
        _plot_mqar_cg(run, rec, steps, sweep)

    phase("char-LM")
    t0 = time.time()
    lmr = lm.run(cfg.lm, seed=args.seed, device=device)
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
            "char-LM val loss": _xy(lmr["cg_sweep"]),
            "regression MSE (t>d)": _xy(reg["cg_sweep"]),
        },
        xlabel="CG steps at inference",
        ylabel="loss",
        logy=True,
    )
    phase("report")
    run.log(**timings, regression=reg, mqar=rec, lm=lmr)
    run.finish(title="mesa-layer reproduce: MesaNet vs GLA, DeltaNet and softmax attention")
    return 0


def _plot_mqar_cg(
    run: Any, rec: dict[str, Any], steps: list[int], sweep: dict[int, list[tuple[int, float]]]
) -> None:
    """Mesa's accuracy (mean over pair counts, and at the largest count) against inference-time
    CG steps, with the other mixers' accuracies as horizontal reference lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kv = rec["kv_pairs"]
    mean = [sum(sweep[k][i][1] for k in kv) / len(kv) for i in range(len(steps))]
    fig, ax = plt.subplots(figsize=(7.5, 4), dpi=120)
    ax.plot(steps, mean, marker="o", color="C0", label="MesaNet, mean over pair counts")
    ax.plot(
        steps,
        [a for _, a in sweep[kv[-1]]],
        marker="s",
        ls="--",
        color="C0",
        alpha=0.6,
        label=f"MesaNet, {kv[-1]} pairs",
    )
    for i, (m, accs) in enumerate(rec["accuracy"].items()):
        if m != "mesa":
            ax.axhline(
                sum(accs) / len(accs),
                color=f"C{i + 1}",
                ls=":",
                label=f"{LABELS[m]}, mean (no CG)",
            )
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xticks(steps, [str(s) for s in steps])
    ax.minorticks_off()
    ax.set_xlabel("CG steps at inference (symlog scale)")
    ax.set_ylabel("query accuracy")
    ax.set_title("MQAR: test-time compute")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    run.save_figure("mqar_accuracy_vs_cg_steps", fig)


def _xy(pairs: list[tuple[int, float]]) -> tuple[list[float], list[float]]:
    return [float(s) for s, _ in pairs], [v for _, v in pairs]
