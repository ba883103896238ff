"""``free-energy-mixer reproduce``: per-channel selection and the char-LM at one scale, one report."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from free_energy_mixer.experiments import charlm, selection
from free_energy_mixer.experiments.common import LABELS, train_config
from free_energy_mixer.experiments.costs import ESTIMATE_S
from shared_core.cli import ReproduceArgs
from shared_core.progress import phase, plan


@dataclass
class ReproduceConfig:
    """Both experiments at one scale (`SCALES`)."""

    selection: selection.SelectionConfig = field(default_factory=selection.SelectionConfig)
    charlm: charlm.CharLMConfig = field(default_factory=charlm.CharLMConfig)


SCALES: dict[str, ReproduceConfig] = {
    # every code path end to end in seconds (CI): 3 steps per model, toy sizes
    "micro": ReproduceConfig(
        selection=selection.SelectionConfig(
            heads=(1, 2),
            channels=4,
            T=16,
            d_model=16,
            tdc_hidden=4,
            batch_size=4,
            eval_batches=1,
            eval_batch_size=8,
            train=train_config(3, warmup=1),
        ),
        charlm=charlm.CharLMConfig(
            max_chars=20_000,
            T=16,
            batch_size=4,
            d_model=16,
            num_layers=1,
            num_heads=2,
            tdc_hidden=4,
            eval_batches=1,
            eval_batch_size=4,
            train=train_config(3, warmup=1),
        ),
    ),
    # the headline comparison in about 5 minutes on 2 busy CPU cores (one thread)
    "tiny": ReproduceConfig(
        selection=selection.SelectionConfig(
            heads=(1, 2, 4),
            channels=4,
            levels=4,
            T=32,
            d_model=32,
            tdc_hidden=8,
            batch_size=32,
            train=train_config(200, lr=1e-2),
        ),
        charlm=charlm.CharLMConfig(
            max_chars=300_000,
            T=64,
            batch_size=16,
            d_model=64,
            num_layers=2,
            num_heads=4,
            tdc_hidden=8,
            train=train_config(150, lr=5e-3),
        ),
    ),
    # the honest CPU run (<= 30 CPU-minutes, one thread): twice tiny's channels and length,
    # up to one head per channel, 2.5x the steps; a 1M-character LM at T = 128
    "small": ReproduceConfig(
        selection=selection.SelectionConfig(
            heads=(1, 2, 4, 8),
            channels=8,
            levels=8,
            T=64,
            d_model=32,
            tdc_hidden=8,
            batch_size=32,
            train=train_config(500, lr=1e-2),
        ),
        charlm=charlm.CharLMConfig(
            max_chars=1_000_000,
            T=128,
            batch_size=16,
            d_model=64,
            num_layers=2,
            num_heads=4,
            tdc_hidden=8,
            train=train_config(500, lr=5e-3),
        ),
    ),
    # the paper's regime is GPU-sized; a starting point at the public code's defaults
    "paper": ReproduceConfig(
        selection=selection.SelectionConfig(
            heads=(1, 2, 4, 8, 16),
            channels=64,
            levels=16,
            T=64,
            d_model=256,
            tdc_hidden=64,
            batch_size=256,
            train=train_config(20000, lr=1e-3, warmup=1000),
        ),
        charlm=charlm.CharLMConfig(
            max_chars=10**9,
            T=1024,
            batch_size=64,
            d_model=512,
            num_layers=8,
            num_heads=8,
            tdc_hidden=64,
            eval_batches=64,
            train=train_config(50000, lr=1e-3, warmup=2000),
        ),
    ),
}


def _plot_accuracy(
    run: Any, task: str, heads: list[int], by_mixer: dict[str, list[float]], chance: float
) -> None:
    """Accuracy vs heads, one line per mixer (a colour per prior, FEM dashed), chance dotted."""
    colour = {"softmax": "C0", "linear": "C1", "gla": "C2"}
    series = {LABELS[m]: (heads, accs) for m, accs in by_mixer.items()}
    styles: dict[str, dict[str, Any]] = {
        LABELS[m]: {
            "color": colour[m.removeprefix("fem-")],
            "linestyle": "--" if m.startswith("fem-") else "-",
            "markersize": 4,
        }
        for m in by_mixer
    }
    series["chance"] = (heads, [chance] * len(heads))
    styles["chance"] = {"color": "gray", "linestyle": ":", "marker": ""}
    run.plot(
        f"selection_{task}_accuracy_vs_heads",
        series,
        xlabel="number of heads",
        ylabel="accuracy per (position, channel)",
        title=f"Per-channel selection ('{task}'): accuracy vs heads",
        xticks=heads,
        styles=styles,
    )


def reproduce(args: ReproduceArgs) -> int:
    """Run both experiments of ``args.config`` and write one report."""
    from free_energy_mixer.data import require_shakespeare
    from shared_core.device import resolve_device, seed_everything
    from shared_core.report import Run

    cfg: ReproduceConfig = args.config
    require_shakespeare()  # fail before the first experiment, not after it
    plan(["per-channel selection", "char-LM", "report"], ESTIMATE_S.get(args.scale))
    device = str(resolve_device(args.device))
    seed_everything(args.seed)
    run = Run(
        "free-energy-mixer",
        {"scale": args.scale, "seed": args.seed, **dataclasses.asdict(cfg)},
        out=args.out,
    )
    timings = {}
    phase("per-channel selection")
    t0 = time.time()
    sel = selection.run(cfg.selection, seed=args.seed, device=device)
    timings["selection_s"] = time.time() - t0
    heads = sel["heads"]
    chance = 1.0 / cfg.selection.levels
    for task, by_mixer in sel["accuracy"].items():
        title = f"per-channel selection '{task}': accuracy vs heads (chance {chance:.3f})"
        for mixer, accs in by_mixer.items():
            run.add_row(
                title,
                mixer=LABELS[mixer],
                mixer_params=sel["mixer_params"][task][mixer][-1],
                **{f"H={h}": a for h, a in zip(heads, accs, strict=True)},
            )
        _plot_accuracy(run, task, heads, by_mixer, chance)
    phase("char-LM")
    t0 = time.time()
    lm = charlm.run(cfg.charlm, seed=args.seed, device=device)
    timings["charlm_s"] = time.time() - t0
    for mixer, bpc in lm["val_bpc"].items():
        run.add_row(
            "char-LM on Shakespeare: validation bits per character",
            mixer=LABELS[mixer],
            params=lm["params"][mixer],
            train_bpc=lm["train_bpc_last10pct"][mixer],
            val_bpc=bpc,
        )
    phase("report")
    run.log(**timings, selection=sel, charlm=lm)
    run.finish(title="free-energy-mixer reproduce: FEM vs its base reads")
    return 0
