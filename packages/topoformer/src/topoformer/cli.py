"""The ``topoformer`` console script: ``topoformer reproduce [--scale micro|tiny|small|paper]``.

Thin on purpose: torch and the experiments are imported inside the command, so ``--help``
stays fast.
"""

from __future__ import annotations

from shared_core.cli import lazy_reproduce_command, make_main

main = make_main(
    "topoformer",
    [
        lazy_reproduce_command(
            "topoformer.experiments.reproduce",
            help=(
                "MUTAG 10-fold CV under the authors' protocol and an honest one (TopoFormer vs "
                "GIN vs WL-SVM vs persistence images + MLP) and FreeSolv with a scaffold split "
                "(micro: about 10 s of CPU; tiny: about 100 s of CPU on one thread; "
                "small/paper: the authors' architecture and 100 epochs, an estimated 10-15 "
                "minutes of CPU)."
            ),
        )
    ],
    description="TopoFormer (ICLR 2026): Topo-Scan token sequences read by a Transformer.",
)

if __name__ == "__main__":
    raise SystemExit(main())
