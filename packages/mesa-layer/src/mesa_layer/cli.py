"""The ``mesa-layer`` console script: ``reproduce``, and ``train`` / ``sample`` on your own text.

Thin on purpose: torch, transformers and the experiments are imported inside the commands, so
``--help`` stays fast.
"""

from __future__ import annotations

from mesa_layer.experiments.costs import reproduce_help
from shared_core.cli import lazy_reproduce_command, make_main
from shared_core.textlm import text_lm_commands

main = make_main(
    "mesa-layer",
    [
        lazy_reproduce_command(
            "mesa_layer.experiments.reproduce",
            help=reproduce_help(),
        ),
        *text_lm_commands(
            "mesa_layer.hf:MesaNetConfig", "a MesaNet LM (Mesa layer + SwiGLU blocks)"
        ),
    ],
    description=(
        "MesaNet's Mesa layer (ICLR 2026): reproduce the headline experiments, or train and "
        "sample a MesaNet LM on your own text."
    ),
)

if __name__ == "__main__":
    raise SystemExit(main())
