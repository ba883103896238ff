"""Training-step cost of NextQuill (0.3's `NextQuillTrainer` step) against TRL's SFT step.

    python benchmarks/bench_step.py [--quick] [--smollm2] [--memory] [--repeats N] [--threads N]
        [--json FILE]

One step = forward, backward and an AdamW update on a batch of 2 sequences of length L (256
and 1024; `--quick`: 256 only), the history block half of the prompt and a 64-token
response, on the tiny random Llama of the reproduction (`--smollm2`: also SmolLM2-135M, full
fine-tuning, offline weights from `shared_core.models`; L = 256 only):

- nextquill (the candidate): what `NextQuillTrainer` runs per micro-batch with theta_D (the
  paper's form, `nextquill train --reference`): theta_D's two passes without gradient
  (`batch_dce`, done in `get_batch_samples`), then the model's two passes (with and without
  the history block) through `nextquill_terms(..., dce=)`, backward, AdamW;
- nextquill self: the same with the DCE from the model being trained (`--self-weights`),
  which 0.3 computes in an extra pair of passes without gradient before the step;
- trl sft: the step of TRL's `SFTTrainer` on prompt/completion data (completion-only loss):
  ``model(input_ids, attention_mask, labels).loss``, backward, AdamW. TRL is not imported
  (its trainer adds data plumbing, not compute, around this call).

theta_D is a frozen copy of the model (same architecture, as `nextquill train-reference`
makes it). The JSON's speed-up is peer time / nextquill time in the same repeat (< 1 is
NextQuill's cost). `--memory` also records the activation memory each step keeps for its
backward pass: the bytes of the distinct tensors autograd saves
(`torch.autograd.graph.saved_tensors_hooks`), parameters excluded.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from nextquill.loss import batch_dce, nextquill_terms

from shared_core.bench import BenchTable, bench_parser, finish, measure

RESPONSE = 64  # response tokens per sequence
BATCH = 2
LR = 1e-5  # AdamW's step is timed, its size does not matter


def make_model(name: str) -> Any:
    if name == "smollm2":
        from shared_core.models import load_model

        model = load_model("smollm2-135m-instruct")
        model.config.use_cache = False
        return model.train()
    from nextquill.model import tiny_llama

    return tiny_llama(96, seed=0).train()


def make_batch(vocab: int, length: int) -> dict[str, torch.Tensor]:
    """Random ids: prompt = prefix (a quarter) + history (half) + suffix, then the response."""
    g = torch.Generator().manual_seed(0)
    prompt = length - RESPONSE
    hist = prompt // 2
    ids = torch.randint(4, vocab, (BATCH, length), generator=g)
    labels = torch.full_like(ids, -100)
    labels[:, prompt:] = ids[:, prompt:]
    keep = torch.ones(length, dtype=torch.bool)
    keep[prompt // 4 : prompt // 4 + hist] = False
    return {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "labels": labels,
        "input_ids_without_history": ids[:, keep],
        "attention_mask_without_history": torch.ones_like(ids[:, keep]),
        "labels_without_history": labels[:, keep],
    }


def loss_of(model: Any, theta_d: Any, batch: dict[str, torch.Tensor], which: str) -> Any:
    """The loss of one step of `which` (the DCE passes run first, without gradient)."""
    if which == "trl sft":
        return model(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            labels=batch["labels"],
        ).loss
    dce = batch_dce(theta_d if which == "nextquill" else model, batch)
    return nextquill_terms(model, batch, dce=dce).loss


def steps(model: Any, theta_d: Any, batch: dict[str, torch.Tensor]) -> dict[str, Any]:
    """One callable per method, each with its own AdamW (as in a user's run)."""
    out = {}
    for which in ("nextquill", "nextquill self", "trl sft"):
        opt = torch.optim.AdamW(model.parameters(), lr=LR)

        def step(w: str = which, o: Any = opt) -> None:
            o.zero_grad(set_to_none=True)
            loss_of(model, theta_d, batch, w).backward()
            o.step()

        out[which] = step
    return out


def activation_mib(model: Any, theta_d: Any, batch: dict[str, torch.Tensor], which: str) -> float:
    """MiB of the distinct non-parameter tensors autograd saves for the backward of one step."""
    params = {p.data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.data_ptr()
        if ptr not in params:
            seen[ptr] = max(seen.get(ptr, 0), t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = loss_of(model, theta_d, batch, which)
    loss.backward()
    model.zero_grad(set_to_none=True)
    return sum(seen.values()) / 2**20


def main() -> None:
    p = bench_parser(__doc__.splitlines()[0])
    p.add_argument("--smollm2", action="store_true", help="also SmolLM2-135M (needs the llm extra)")
    p.add_argument("--memory", action="store_true", help="also the activations saved per step")
    args = p.parse_args()
    repeats = min(args.repeats, 3) if args.quick else args.repeats
    names = ["tiny", "smollm2"] if args.smollm2 else ["tiny"]
    tables = []
    for name in names:
        model = make_model(name)
        theta_d = copy.deepcopy(model).eval().requires_grad_(False)
        lengths = [256] if args.quick or name == "smollm2" else [256, 1024]
        title = f"training step, {name} model, batch {BATCH}, CPU, {args.threads} thread(s)"
        table = BenchTable(title, candidate="nextquill")
        for length in lengths:
            batch = make_batch(model.config.vocab_size, length)
            results = measure(
                steps(model, theta_d, batch),
                repeats=repeats if name == "tiny" else min(repeats, 3),
                warmup=1,
                min_time=0.0,
                threads=args.threads,
            )
            row = table.add(f"L = {length}", results)
            if args.memory:
                mib = {w: activation_mib(model, theta_d, batch, w) for w in results}
                row["activations_mib"] = mib
                row["activations_ratio"] = mib["nextquill"] / mib["trl sft"]
                print(
                    f"{name} L={length}: activations saved for backward (MiB): "
                    + ", ".join(f"{w} {v:.1f}" for w, v in mib.items())
                    + f"; NextQuill / SFT {row['activations_ratio']:.2f}"
                )
        tables.append(table)
    finish(tables, args.json)


if __name__ == "__main__":
    main()
