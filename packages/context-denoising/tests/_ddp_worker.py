"""One process of the 2-process DDP check in test_trainer.py (run by it, not collected by pytest).

Trains one optimizer step of `CDTTrainer` on test_trainer's 8 rows with 2 processes (gloo,
CPU) x 2 accumulation steps x 2 rows; each rank saves its synchronised gradients (by
parameter name, DDP's ``module.`` prefix removed) and its own training loss to
``argv[1] + ".<rank>"``.
"""

from __future__ import annotations

import sys

import torch
from context_denoising.model import tiny_llama
from context_denoising.trainer import CDTTrainer
from test_trainer import ROWS, VOCAB, GradCapture, rows
from transformers import TrainingArguments

from shared_core.distributed import shutdown


def main(out: str) -> None:
    args = TrainingArguments(
        output_dir=out + ".run",
        per_device_train_batch_size=ROWS // 4,
        gradient_accumulation_steps=2,
        max_steps=1,
        learning_rate=1e-2,
        lr_scheduler_type="constant",
        max_grad_norm=0.0,
        report_to=[],
        use_cpu=True,
        ddp_backend="gloo",
        save_strategy="no",
        logging_strategy="no",
        seed=0,
        disable_tqdm=True,
    )
    cap = GradCapture()
    model = tiny_llama(VOCAB, hidden_size=32, seed=1)
    trainer = CDTTrainer(model=model, args=args, train_dataset=rows(), callbacks=[cap])
    result = trainer.train()
    grads = {n.removeprefix("module."): g for n, g in cap.grads.items()}
    saved = {"grads": grads, "loss": result.training_loss, "world": args.world_size}
    torch.save(saved, f"{out}.{trainer.args.process_index}")
    shutdown()  # leave the group together: a rank exiting with gloo threads alive aborts


if __name__ == "__main__":
    main(sys.argv[1])
