"""One process of the 2-process DDP check in test_hf.py (run by it, not collected by pytest).

Both forms in turn (paper: theta_D weights, weighted L_p; code: self weights, mean L_p): one
optimiser step of `NextQuillTrainer` over the shared global batch of 8 rows, as 2 processes
(gloo, CPU) x 2 accumulation steps x 2 rows; rank 0 saves the synchronised gradients and the
logged loss (the mean over ranks) of each form to ``argv[1]``.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
import transformers
from nextquill.model import TinyLlamaConfig

from shared_core.distributed import shutdown

FORMS = ("paper", "code")
ARCH = TinyLlamaConfig(hidden=32, layers=1, ff=64)


def ddp_case(form: str) -> tuple[list[dict[str, str]], Any, Any, Any]:
    """``(rows, tokenizer, config, theta_D or None)`` of `form` (the model is `model`)."""
    from nextquill import NextQuillConfig
    from nextquill.model import tiny_llama, word_tokenizer
    from nextquill.world import WorldConfig, make_world

    world = make_world(WorldConfig(users=12, test_users=4, reviews_per_user=3), seed=0)
    tok = word_tokenizer(world.vocabulary)
    # users with and without history, responses of different lengths: uneven micro-batches
    rows = [
        {"prefix": e.example.prefix, "history": e.example.history if i % 3 else "",
         "suffix": e.example.suffix, "target": e.example.target}
        for i, e in enumerate(world.train[:8])
    ]  # fmt: skip
    # delta 0: a random model's |DCE| is ~1e-3, so the paper's 0.05 would weight all tokens alike
    cfg = NextQuillConfig(
        alpha=0.3, delta=0.0, lp_reduction="weighted" if form == "paper" else "mean"
    )
    # float64: a token whose DCE sits within float32 noise of delta would flip with the padding
    theta_d = tiny_llama(len(tok), ARCH, seed=1).double() if form == "paper" else None
    return rows, tok, cfg, theta_d


def model(vocab: int) -> Any:
    """The model being trained: the same seeded float64 tiny Llama in every process."""
    from nextquill.model import tiny_llama

    return tiny_llama(vocab, ARCH, seed=0).double()


class Grab(transformers.TrainerCallback):
    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.grads = [p.grad.detach().clone() for p in kw["model"].parameters()]


def main(out: str) -> None:
    from nextquill.hf import NextQuillCollator, NextQuillTrainer

    saved = {}
    for form in FORMS:
        rows, tok, cfg, theta_d = ddp_case(form)
        grab = Grab()
        args = transformers.TrainingArguments(
            output_dir=f"{out}.{form}.run",
            max_steps=1,
            per_device_train_batch_size=2,
            gradient_accumulation_steps=2,
            max_grad_norm=0.0,
            logging_steps=1,
            report_to=[],
            use_cpu=True,
            ddp_backend="gloo",
            save_strategy="no",
            learning_rate=1e-3,
            remove_unused_columns=False,
        )
        trainer = NextQuillTrainer(
            model=model(len(tok)), args=args, train_dataset=rows,
            data_collator=NextQuillCollator(tok), config=cfg, reference_model=theta_d,
            callbacks=[grab],
        )  # fmt: skip
        result = trainer.train()
        saved[form] = {
            "grads": grab.grads,
            "loss": result.training_loss,
            "world": args.world_size,
            "processes": trainer.accelerator.num_processes,
        }
    if torch.distributed.get_rank() == 0:
        torch.save(saved, out)
    shutdown()  # a barrier, then leave the group


if __name__ == "__main__":
    main(sys.argv[1])
