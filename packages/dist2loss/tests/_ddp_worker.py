"""One process of the 2-process DDP check in test_hf.py (run by it, not collected by pytest).

Trains one optimizer step of `Dist2Trainer` on the shared batch of 8 ragged sequences, with 2
processes (gloo, CPU) x 2 accumulation steps x 2 sequences, and rank 0 saves the synchronised
gradient and the logged loss to ``argv[1]``.
"""

from __future__ import annotations

import sys

import torch
import transformers
from dist2loss import number_table
from dist2loss.hf import Dist2Trainer
from test_hf import _ragged_rows, _tiny_llama

from shared_core.distributed import shutdown


class Grab(transformers.TrainerCallback):
    def on_pre_optimizer_step(self, args, state, control, model=None, **_):
        self.grads = [p.grad.detach().clone() for p in model.parameters()]


def main(out: str, normalise: str) -> None:
    vocab = 24
    table = number_table({4 + i: float(i) for i in range(20)}, vocab)
    grab = Grab()
    args = transformers.TrainingArguments(
        output_dir=out + ".run",
        max_steps=1,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=2,
        max_grad_norm=0.0,
        report_to=[],
        use_cpu=True,
        ddp_backend="gloo",
        save_strategy="no",
        learning_rate=1e-3,
    )
    trainer = Dist2Trainer(
        model=_tiny_llama(vocab),
        args=args,
        train_dataset=_ragged_rows(vocab),
        metric=table,
        callbacks=[grab],
        tau=2.0,
        alpha=0.5,
        negatives=2,
        normalise=normalise,
    )
    out_ = trainer.train()
    if trainer.args.process_index == 0:
        torch.save({"grads": grab.grads, "loss": out_.training_loss, "world": args.world_size}, out)
    shutdown()  # leave the group together: a rank exiting with gloo threads alive aborts


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
