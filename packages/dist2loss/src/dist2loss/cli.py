"""The ``dist2loss`` console script: ``reproduce [--scale micro|tiny|small|paper]``, and on a
user's data ``train`` and ``evaluate`` (`dist2loss.verbs`)."""

from __future__ import annotations

from typing import Any

from dist2loss.experiments.reproduce import ESTIMATE_S, SCALES
from shared_core.cli import ReproduceArgs, make_main, reproduce_command
from shared_core.verbs import evaluate_command, train_command


def _reproduce(args: ReproduceArgs) -> Any:
    from dist2loss.experiments.reproduce import run  # imports torch only when it runs

    run(args)
    return 0


def _lazy(name: str) -> Any:
    from dist2loss import verbs  # no torch: verbs imports it inside the verbs

    return getattr(verbs, name)


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
            f"seconds, tiny ~{ESTIMATE_S['tiny']:.0f} CPU-s, small ~"
            f"{ESTIMATE_S['small'] / 60:.0f} CPU-minutes (an estimate: not run), paper hours "
            "(CPU, 1 thread).",
        ),
        train_command(
            "dist2loss.verbs:train",
            "fine-tune a causal LM (--model DIR|smollm2) on JSONL records with DIST2Loss "
            "(Dist2Trainer); --set alpha=0 is plain SFT",
            config="dist2loss.verbs:TrainConfig",
            options=lambda p: _lazy("train_options")(p),
        ),
        evaluate_command(
            "dist2loss.verbs:evaluate",
            "exact match and mean absolute error of a model's numeric answers on JSONL "
            "prompt/completion records",
            options=lambda p: _lazy("evaluate_options")(p),
            many=False,
        ),
    ],
    description="DIST2Loss (ICLR 2026): distance-aware targets for metric tokens.",
)

if __name__ == "__main__":
    raise SystemExit(main())
