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
                "MUTAG 10-fold CV under the authors' protocol and an honest one (TopoFormer on "
                "Ricci + HKS vs GIN vs WL-SVM vs persistence images + MLP) and FreeSolv with a "
                "scaffold split (TopoFormer on Ricci + atomic weight + ECFP vs GIN) "
                "(micro: about 20 s of CPU; tiny: about 80 s of CPU on one thread; "
                "small/paper: the authors' architecture and epochs, an estimated 10 minutes "
                "of CPU)."
            ),
        )
    ],
    description="TopoFormer (ICLR 2026): Topo-Scan token sequences read by a Transformer.",
)

if __name__ == "__main__":
    raise SystemExit(main())
