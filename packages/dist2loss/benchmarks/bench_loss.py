"""Forward+backward time of DIST2Loss against plain cross-entropy and ntloss's NTLoss.

    python benchmarks/bench_loss.py [--quick] [--repeats N] [--threads N] [--json out.json]

GPT-2's vocabulary (50,257; the offline BPE of `shared_core.models`) with its pure-digit
tokens as V_d for DIST2Loss and ntloss's ``digit_level=False`` number tokens (both about
1k), logits (batch, length, 50257) with about half the labels number tokens. Each candidate
computes its whole training loss and backpropagates into the logits:

- ours: ``dist2_loss`` (CE + 0.1 KL over V_d, full-vocabulary form, the default since 0.2.0;
  0.1.0 measured the restricted form);
- ce: ``F.cross_entropy`` alone (what DIST2Loss adds to);
- ntloss: ``F.cross_entropy + 0.3 * NTLoss`` (Wasserstein NTL, the closest peer).

The ratio column is peer time / ours (> 1: ours faster; < 1 is our overhead over that peer).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from dist2loss import dist2_loss, number_table_from_tokenizer

from shared_core.bench import BenchTable, bench_parser, finish, measure
from shared_core.models import load_tokenizer


def main() -> None:
    p = bench_parser(__doc__.splitlines()[0])
    args = p.parse_args()
    from ntloss import NTLoss

    tok = load_tokenizer("gpt2-bpe")
    vocab = len(tok)
    table = number_table_from_tokenizer(tok)
    ntl = NTLoss(tok, vocab_size=vocab, digit_level=False)
    settings = [(2, 128)] if args.quick else [(2, 128), (8, 1024)]
    repeats = min(args.repeats, 3) if args.quick else args.repeats
    title = (
        f"loss forward+backward, vocabulary {vocab}, |V_d| = {table.size} (ntloss: "
        f"{int(ntl.is_number_token.sum())} number tokens), CPU, {args.threads} thread(s)"
    )
    tables = [BenchTable(title, candidate="ours")]
    g = torch.Generator().manual_seed(0)
    for batch, length in settings:
        logits = torch.randn(batch, length, vocab, generator=g)
        numbers = table.token_ids[torch.randint(0, table.size, (batch, length), generator=g)]
        words = torch.randint(0, vocab, (batch, length), generator=g)
        labels = torch.where(torch.rand(batch, length, generator=g) < 0.5, numbers, words)

        def ours(logits: torch.Tensor = logits, labels: torch.Tensor = labels) -> None:
            x = logits.detach().requires_grad_(True)
            dist2_loss(x, labels, table, tau=1.0, alpha=0.1).backward()

        def ce(logits: torch.Tensor = logits, labels: torch.Tensor = labels) -> None:
            x = logits.detach().requires_grad_(True)
            F.cross_entropy(x.reshape(-1, vocab), labels.reshape(-1)).backward()

        def ntloss(logits: torch.Tensor = logits, labels: torch.Tensor = labels) -> None:
            x = logits.detach().requires_grad_(True)
            loss = F.cross_entropy(x.reshape(-1, vocab), labels.reshape(-1))
            (loss + 0.3 * ntl(x, labels)).backward()

        results = measure(
            {"ours": ours, "ce": ce, "ntloss": ntloss},
            repeats=repeats,
            warmup=1,
            min_time=0.0,
            threads=args.threads,
        )
        tables[0].add(f"{batch} x {length}", results)
    finish(tables, args.json)


if __name__ == "__main__":
    main()
