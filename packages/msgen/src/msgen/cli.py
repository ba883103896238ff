"""The ``msgen`` console script: ``msgen reproduce [--scale ...]``.

Thin on purpose: torch, RDKit and the experiment are imported inside the command, so
``--help`` stays fast.
"""

from __future__ import annotations

from shared_core.cli import lazy_reproduce_command, make_main

main = make_main(
    "msgen",
    [
        lazy_reproduce_command(
            "msgen.experiments.reproduce",
            help=(
                "Train MSGEN (heavy atoms -> upsampling -> guided all atoms) and the same GeoDiff "
                "diffusion model alone on real QM9 geometries; compare COV/MAT and bond quality "
                "with RDKit ETKDG (micro: seconds, tiny: ~84 CPU-s with one thread, small: "
                "~16 CPU-minutes, paper: GPU-sized; results/tiny.json, results/small.json)."
            ),
        )
    ],
    description="MSGEN (ICLR 2026): hierarchical multi-scale conformer generation.",
)

if __name__ == "__main__":
    raise SystemExit(main())
