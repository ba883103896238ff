"""Training-step cost of NextQuill (two forward passes) against a plain SFT step.

    python benchmarks/bench_step.py [--quick] [--smollm2] [--memory] [--repeats N] [--threads N]

One step = forward + backward of the whole loss on a batch of 2 sequences of length L
(256 and 1024; `--quick`: 256 only), the history block half of the prompt and a 64-token
response, on the tiny random Llama of the reproduction (`--smollm2`: also SmolLM2-135M,
full fine-tuning, offline weights from `shared_core.models`):

- ours: ``nextquill_loss`` (the full prompt and the prompt without history, weights from the
  model itself);
- sft: the response cross-entropy of the full prompt (ContextSFT, what a user runs otherwise).

The ratio column is sft time / ours (< 1 is NextQuill's overhead). `--memory` also reports
the activation memory each step keeps for its backward pass: the bytes of the distinct
tensors autograd saves (`torch.autograd.graph.saved_tensors_hooks`), parameters excluded.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from nextquill.loss import forward_logits, nextquill_loss, target_logits

from shared_core.bench import BenchTable, bench_parser, finish, measure

RESPONSE = 64  # response tokens per sequence
BATCH = 2


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


def step(model: Any, batch: dict[str, torch.Tensor], which: str) -> None:
    model.zero_grad(set_to_none=True)
    if which == "ours":
        nextquill_loss(model, batch).backward()
    else:
        logits = forward_logits(model, batch["input_ids"], batch["attention_mask"])
        F.cross_entropy(*target_logits(logits, batch["labels"])).backward()


def activation_mib(model: Any, batch: dict[str, torch.Tensor], which: str) -> float:
    """MiB of the distinct non-parameter tensors autograd saves for the backward of one step."""
    params = {p.data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.data_ptr()
        if ptr not in params:
            seen[ptr] = max(seen.get(ptr, 0), t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        step(model, batch, which)
    return sum(seen.values()) / 2**20


def main() -> None:
    p = bench_parser(__doc__.splitlines()[0])
    p.add_argument("--smollm2", action="store_true", help="also SmolLM2-135M (needs the llm extra)")
    p.add_argument("--memory", action="store_true", help="also peak memory per step")
    args = p.parse_args()
    lengths = [256] if args.quick else [256, 1024]
    repeats = min(args.repeats, 3) if args.quick else args.repeats
    names = ["tiny", "smollm2"] if args.smollm2 else ["tiny"]
    tables = []
    for name in names:
        model = make_model(name)
        title = f"training step, {name} model, batch {BATCH}, CPU, {args.threads} thread(s)"
        table = BenchTable(title, candidate="ours")
        for length in lengths:
            batch = make_batch(model.config.vocab_size, length)
            results = measure(
                {
                    "ours": lambda m=model, b=batch: step(m, b, "ours"),
                    "sft": lambda m=model, b=batch: step(m, b, "sft"),
                },
                repeats=repeats if name == "tiny" else min(repeats, 3),
                warmup=1,
                min_time=0.0,
                threads=args.threads,
            )
            table.add(f"L = {length}", results)
            if args.memory:
                ours, sft = (activation_mib(model, batch, w) for w in ("ours", "sft"))
                print(
                    f"{name} L={length}: activations saved for backward: NextQuill "
                    f"{ours:.1f} MiB, SFT {sft:.1f} MiB, ratio {ours / sft:.2f}"
                )
        tables.append(table)
    finish(tables, args.json)


if __name__ == "__main__":
    main()
