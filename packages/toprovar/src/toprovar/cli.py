"""The ``toprovar`` console script: ``toprovar reproduce [--scale micro|tiny|small]``.

Thin on purpose: torch and the experiments are imported only when the command runs, so
``--help`` stays fast.
"""

from __future__ import annotations

from shared_core.cli import lazy_reproduce_command, make_main

main = make_main(
    "toprovar",
    [
        lazy_reproduce_command(
            "toprovar.experiments.reproduce",
            help=(
                "Train a tokenizer, a tiny VAR and an evaluator on digits and faces (cached), "
                "then generate unpruned and with ToProVAR, FastVAR and SkipVAR at several "
                "budgets: MACs, wall speed-up, fidelity and quality (micro: seconds; tiny: "
                "about 3 CPU-minutes with one thread; small: about an hour on CPU)."
            ),
            scales=("micro", "tiny", "small"),
        )
    ],
    description="ToProVAR (ICLR 2026): entropy-guided token/layer/scale pruning for VAR.",
)

if __name__ == "__main__":
    raise SystemExit(main())
