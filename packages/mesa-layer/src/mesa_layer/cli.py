"""The ``mesa-layer`` console script: ``mesa-layer reproduce [--scale tiny|small|paper]``."""

from __future__ import annotations

from mesa_layer import __version__
from shared_core.cli import ReproduceArgs, make_main, reproduce_command


def _reproduce(args: ReproduceArgs) -> int:
    from mesa_layer.reproduce import reproduce  # imports torch only when the command runs

    return reproduce(args)


main = make_main(
    "mesa-layer",
    __version__,
    [
        reproduce_command(
            _reproduce, help="in-context regression, MQAR and char-LM: MesaNet vs baselines"
        )
    ],
    description="MesaNet's Mesa layer (ICLR 2026): reproduce the headline experiments at small scale.",
)

if __name__ == "__main__":
    raise SystemExit(main())
