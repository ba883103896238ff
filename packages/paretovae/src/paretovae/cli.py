"""The ``paretovae`` console script: ``paretovae reproduce [--scale ...]`` and the verbs on a
user's matrix (``fit``, ``encode``, ``decode``; `paretovae.verbs`).

Thin on purpose: torch and the experiments are imported inside the command, so ``--help``
stays fast.
"""

from __future__ import annotations

import argparse

from paretovae.costs import cost_help
from shared_core.cli import lazy_reproduce_command, make_main
from shared_core.verbs import Slots, verb_command


def _real(p: argparse.ArgumentParser) -> None:
    p.add_argument("--real", action="store_true",
                   help="the matrix is real-valued (default: counts, which must be >= 0)")  # fmt: skip


main = make_main(
    "paretovae",
    [
        lazy_reproduce_command(
            "paretovae.experiments.reproduce",
            help=(
                "Train VAE, LaplaceVAE, t3VAE and ParetoVAE (t and symPareto decoders) on "
                "heavy-tailed 2-D data, scale-free degree vectors, Shakespeare word counts and "
                f"salt-and-pepper digits; tail MMD/SW, head/tail Jaccard, PSNR/SSIM ({cost_help()})."
            ),
        ),
        verb_command(
            "fit",
            "paretovae.verbs:fit",
            "train ParetoVAE on a matrix (CSV/.npy/.npz); save it, latents.csv and "
            "reconstructions.csv to --out; print the tail diagnostics",
            Slots(data="required", checkpoint="none", out="required"),
            config="paretovae.verbs:FitSettings",
            options=_real,
        ),
        verb_command(
            "encode",
            "paretovae.verbs:encode",
            "latent means of each row of a matrix (CSV to --out, or stdout)",
            Slots(data="required", checkpoint="required", out="optional"),
            options=_real,
        ),
        verb_command(
            "decode",
            "paretovae.verbs:decode",
            "the decoder's mean of each latent code (a CSV as `encode` writes)",
            Slots(data="required", checkpoint="required", out="optional"),
        ),
    ],
    description="ParetoVAE (ICLR 2026): reproduce the headline comparisons.",
)

if __name__ == "__main__":
    raise SystemExit(main())
