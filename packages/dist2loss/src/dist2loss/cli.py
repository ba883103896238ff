"""The ``dist2loss`` console script: ``dist2loss reproduce [--scale micro|tiny|small|paper]``."""

from __future__ import annotations

from typing import Any

from dist2loss.experiments.reproduce import SCALES
from shared_core.cli import ReproduceArgs, make_main, reproduce_command


def _reproduce(args: ReproduceArgs) -> Any:
    from dist2loss.experiments.reproduce import run  # imports torch only when it runs

    run(args)
    return 0


main = make_main(
    "dist2loss",
    [
        reproduce_command(
            _reproduce,
            SCALES,
            help="Two findings: the paper's toy (in-context linear regression as integer "
            "tokens: CE vs CE+DIST2Loss vs label smoothing vs ntloss at N = 250/1k/4k), then "
            "VQ digits (class-conditional AR over k-means codes of sklearn digits: CE vs "
            "CE+DIST2Loss at N = 100/300/1000 images, Fréchet distance); micro takes "
            "seconds, tiny about 5 minutes, small about an hour, paper hours (CPU, 1 thread).",
        )
    ],
    description="DIST2Loss (ICLR 2026): distance-aware targets for metric tokens.",
)

if __name__ == "__main__":
    raise SystemExit(main())
