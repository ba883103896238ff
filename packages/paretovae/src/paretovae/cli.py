"""The ``paretovae`` console script: ``paretovae reproduce [--scale ...]``.

Thin on purpose: torch and the experiments are imported inside the command, so ``--help``
stays fast.
"""

from __future__ import annotations

from shared_core.cli import lazy_reproduce_command, make_main

main = make_main(
    "paretovae",
    [
        lazy_reproduce_command(
            "paretovae.experiments.reproduce",
            help=(
                "Train VAE, LaplaceVAE, t3VAE and ParetoVAE (t and symPareto decoders) on "
                "heavy-tailed 2-D data, scale-free degree vectors, Shakespeare word counts and "
                "salt-and-pepper digits; tail MMD/SW, head/tail Jaccard, PSNR/SSIM (micro: "
                "seconds, tiny: ~103 CPU-s with one thread, 3 seeds; small: ~399 CPU-s, 5 "
                "seeds, as measured in the README; paper: GPU-sized)."
            ),
        )
    ],
    description="ParetoVAE (ICLR 2026): reproduce the headline comparisons.",
)

if __name__ == "__main__":
    raise SystemExit(main())
