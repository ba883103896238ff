"""The ``convt3`` console script: ``reproduce``, and ``train`` / ``rollout`` / ``evaluate`` on
a user's sequences (`convt3.verbs`).

Thin on purpose: torch and the experiments are imported inside the command, so ``--help``
stays fast.
"""

from __future__ import annotations

from convt3.experiments.config import ESTIMATE_S as COSTS  # the one cost figure (CPU s)
from convt3.verbs import evaluate_options, key_option, rollout_options
from shared_core.cli import lazy_reproduce_command, make_main
from shared_core.verbs import Slots, evaluate_command, train_command, verb_command

main = make_main(
    "convt3",
    [
        lazy_reproduce_command(
            "convt3.experiments.reproduce",
            help=(
                "Train ConvT3 and ConvS5 with 1x1 and 3x3 input/output (B/C) kernels and a "
                "ConvLSTM (equal parameters) on forced PDEs on 16x16 grids, open loop beyond the "
                "training length, over seeds; small and paper add moving digits. micro: "
                f"~{COSTS['micro']:.0f} CPU s, tiny: ~{COSTS['tiny']:.0f} CPU s (heat, two "
                f"seeds), small: ~{COSTS['small'] / 60:.0f} CPU minutes, on one thread; paper: "
                "GPU-sized; results/tiny.json."
            ),
        ),
        train_command(
            "convt3.verbs:train",
            "train a next-frame model (ConvT3; --set model=convs5 for the baseline) on "
            "sequences (N, T, C, H, W) in a .npy/.npz file",
            config="convt3.verbs:TrainSettings",
            options=key_option,
        ),
        verb_command(
            "rollout",
            "convt3.verbs:rollout",
            "predict --steps frames after each sequence of --data, closed loop: a .npz, a GIF "
            "and a frame-strip PNG",
            Slots(data="required", checkpoint="required", out="required"),
            options=rollout_options,
        ),
        evaluate_command(
            "convt3.verbs:evaluate",
            "per-step rollout MSE after --context frames against the rest of each sequence, "
            "beside persistence (and --baseline)",
            options=evaluate_options,
            many=False,
        ),
    ],
    description="ConvT3 (ICLR 2026): ConvSSMs with 3x3 state kernels; reproduce the findings, "
    "train and roll out on your own sequences.",
)

if __name__ == "__main__":
    raise SystemExit(main())
