"""The ``mesa-layer`` console script: ``mesa-layer reproduce [--scale micro|tiny|small|paper]``.

Thin on purpose: torch and the experiments are imported inside the command, so ``--help``
stays fast.
"""

from __future__ import annotations

from typing import Any

from shared_core.cli import ReproduceArgs, make_main, reproduce_command


class _LazyScales(dict[str, Any]):
    """The scale names for ``--help``; the configs (which import torch) load on first use."""

    def __getitem__(self, scale: str) -> Any:
        from mesa_layer.experiments.reproduce import SCALES

        return SCALES[scale]


def _reproduce(args: ReproduceArgs) -> int:
    from mesa_layer.experiments.reproduce import reproduce

    return reproduce(args)


main = make_main(
    "mesa-layer",
    [
        reproduce_command(
            _reproduce,
            _LazyScales.fromkeys(("micro", "tiny", "small", "paper")),
            help=(
                "Train MesaNet, GLA, DeltaNet and softmax attention on in-context regression, "
                "MQAR and a Shakespeare char-LM and report error, recall accuracy, validation "
                "loss and loss vs CG steps (micro: ~20 s, tiny: ~5 min on 2 CPU cores with one "
                "thread, small: hours on CPU, paper: GPU-sized)."
            ),
        )
    ],
    description="MesaNet's Mesa layer (ICLR 2026): reproduce the headline experiments.",
)

if __name__ == "__main__":
    raise SystemExit(main())
