"""SmolLM2-135M reward models in the controlled world: CROME vs the plain Bradley-Terry RM.

Issue 63's run on a real small LM (offline, CPU): both arms start from the same
SmolLM2-135M-Instruct with a zero ``score`` head (`crome.SequenceRewardModel`, what
``crome train --model smollm2`` builds) and take the same steps at the same batch size.

- **plain RM** (the baseline): the Bradley-Terry loss ``-log sigma(r_chosen - r_rejected)``,
  averaged over the batch, on the original preference pairs only: the loss of TRL's
  `RewardTrainer` (without its optional reward centring), trained by crome's own loop (the
  same optimiser and schedule as the CROME arm; TRL itself is not a dependency).
- **CROME RM**: the same pairs plus their causal and neutral augmentations from the world's
  exact oracle (all kept: the paper's filter needs a pass of the plain RM over every
  augmentation, which this CPU budget leaves out), trained with Bradley-Terry + the tie loss.

Reported per arm: pairwise accuracy on i.i.d. and counterfactual test pairs (the spurious
decoration flipped), accuracy on the causal augmentations of held-out test pairs and the tie
accuracy (|sigmoid(margin) - 1/2| <= 0.1) and mean |margin| on their neutral augmentations,
with each arm's CPU seconds. Run: ``python -m crome.experiments.smollm2_rm --json FILE``.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from dataclasses import asdict, dataclass, field

from crome import world as W
from crome.augmentation import AugmentConfig, augment, world_irrelevant, world_verifier
from crome.data import PairRow
from crome.oracle import ProgrammaticOracle
from crome.sequence_model import SequenceRewardModel
from crome.train import TrainConfig, train_reward_model
from crome.verbs import pair_metrics


@dataclass(frozen=True)
class SmolConfig:
    """The run's sizes: the world, the shared training budget and the RM's max length."""

    world: W.WorldConfig = field(
        default_factory=lambda: W.WorldConfig(n_facts=20, n_train=64, n_test=32)
    )
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            # 120 x 8 rows: 3 passes over CROME's 320 rows (as tiny sizes both RMs, issue 14)
            steps=120,
            batch_size=8,
            trainable_layers=4,
            lr_encoder=1e-4,
            lr_head=2e-3,
        )
    )
    max_length: int = 96  # SmolLM2's chat template (with its system turn) + a world answer


def evaluate_arm(
    model: SequenceRewardModel, w: W.World, held_out: list[PairRow]
) -> dict[str, float]:
    """Accuracies of one trained RM (`crome.verbs.pair_metrics` on each split)."""
    iid = pair_metrics(model, w.test_iid)
    cf = pair_metrics(model, w.test_cf)
    aug = pair_metrics(model, held_out)  # its preference rows are the causal augmentations
    return {
        "iid_acc": float(iid["accuracy"]),
        "cf_acc": float(cf["accuracy"]),
        "causal_aug_acc": float(aug["accuracy"]),
        "neutral_tie_acc": float(aug["tie_accuracy"]),
        "neutral_abs_margin": float(aug["tie_abs_margin"]),
    }


def run(config: SmolConfig = SmolConfig(), seed: int = 0) -> dict[str, object]:
    """Train and evaluate both arms; returns the results (what ``--json`` writes)."""
    w = W.make_world(config.world)
    oracle = ProgrammaticOracle(seed=seed)
    aug_config = AugmentConfig(seed=seed)
    train_aug, _ = augment(w.train, oracle, aug_config, verify=world_verifier,
                           irrelevant=world_irrelevant)  # fmt: skip
    test_aug, _ = augment(w.test_iid, oracle, aug_config, verify=world_verifier,
                          irrelevant=world_irrelevant)  # fmt: skip
    start = SequenceRewardModel.from_causal_lm("smollm2", config.max_length)
    init = copy.deepcopy(start.state_dict())
    arms = {"plain RM (Bradley-Terry)": list(w.train), "CROME RM": [*w.train, *train_aug]}
    results: dict[str, object] = {}
    for i, (name, rows) in enumerate(arms.items()):
        model = (
            start if i == 0 else SequenceRewardModel.from_causal_lm("smollm2", config.max_length)
        )
        model.load_state_dict(init)
        cpu0, wall0 = time.process_time(), time.time()
        history = train_reward_model(model, rows, config.train, desc=name)
        train_cpu = time.process_time() - cpu0
        metrics = evaluate_arm(model, w, test_aug)
        results[name] = {
            **metrics,
            "train_rows": len(rows),
            "first_loss": history[0]["loss"],
            "final_loss": history[-1]["loss"],
            "train_cpu_s": round(train_cpu, 1),
            "cpu_s": round(time.process_time() - cpu0, 1),
            "wall_s": round(time.time() - wall0, 1),
        }
        print(json.dumps({name: results[name]}), flush=True)
    provenance: dict[str, int] = {}
    for r in test_aug:
        provenance[r.provenance] = provenance.get(r.provenance, 0) + 1
    return {
        "arms": results,
        "held_out_augmentations": provenance,
        "test_pairs": {"iid": len(w.test_iid), "counterfactual": len(w.test_cf)},
        "config": asdict(config),
        "seed": seed,
        "model": "SmolLM2-135M-Instruct (offline GGUF, de-quantised), zero score head",
    }


def main(argv: list[str] | None = None) -> None:
    """``python -m crome.experiments.smollm2_rm [--steps N] [--json FILE]``."""
    from dataclasses import replace

    from shared_core.atomic import atomic_write_json
    from shared_core.device import limit_threads

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=SmolConfig().train.steps, help="steps per arm")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", help="write the results here")
    a = p.parse_args(argv)
    config = SmolConfig()
    config = replace(config, train=replace(config.train, steps=a.steps, seed=a.seed, device="cpu"))
    cpu0 = time.process_time()
    with limit_threads(a.threads):
        out = run(config, seed=a.seed)
    out["cpu_s"] = round(time.process_time() - cpu0, 1)
    out["command"] = (
        f"python -m crome.experiments.smollm2_rm --steps {a.steps} --threads {a.threads}"
    )
    print(json.dumps(out, indent=2))
    if a.json:
        atomic_write_json(a.json, out)


if __name__ == "__main__":
    main()
