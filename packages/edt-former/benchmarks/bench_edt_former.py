"""Benchmarks: connector training vs LoRA fine-tuning, and entropy patching on ZINC.

1. One training step (forward + backward) on a batch of molecular questions: EDT-Former
   (frozen LLM; connector + new embedding rows train) vs LoRA r = 8 on the LLM with the
   SMILES in the prompt (what a user would otherwise fine-tune). Reported: molecules/s
   (from the CPU time per step) and trainable parameters.
2. Entropy patching of ZINC molecules (scoring by the entropy model + group ids): ours
   (batched threshold and exclusive cumulative sum) vs the official per-molecule loop
   (``group_ids_by_entropy``) after the same batched scoring.

With ``--json``, each row also holds ``molecules_per_s`` (from the median CPU time) and the
training row ``trainable_parameters``.

    python benchmarks/bench_edt_former.py [--quick] [--llm tiny|smollm2] [--json out.json]
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from edt_former.atoms import AtomVocab, tokenize_atoms
from edt_former.data import Encoded, collate, encode_prompts
from edt_former.entropy_model import atom_entropies, build_entropy_model
from edt_former.llm import smollm2, tiny_llm
from edt_former.model import MOL, ConnectorConfig, EDTConnector, EDTFormer, answer_loss, freeze_llm
from edt_former.patching import entropy_group_ids
from edt_former.qformer import QFormerConfig
from edt_former.reference import entropy_group_ids_reference

from shared_core.bench import BenchTable, bench_parser, finish, measure
from shared_core.data import load


def _step(model: EDTFormer, batch: dict[str, torch.Tensor]) -> None:
    model.zero_grad(set_to_none=True)
    loss, _ = answer_loss(model, batch)
    loss.backward()


def bench_training(
    llm_name: str, batch_size: int, repeats: int
) -> tuple[BenchTable, dict[str, int]]:
    base = tiny_llm() if llm_name == "tiny" else smollm2()
    smiles = list(load("zinc-smiles", limit=batch_size))
    qs = ["soluble"] * batch_size
    ys = np.arange(batch_size) % 2
    g = torch.Generator().manual_seed(0)
    sizes = [len(tokenize_atoms(s)) for s in smiles]
    enc = Encoded(
        nodes=[torch.randn(n, 64, generator=g) for n in sizes],  # stand-in node features
        brics=[np.arange(n) // 3 for n in sizes],
        entropy=[np.arange(n) // 4 for n in sizes],
    )
    spaced = llm_name == "tiny"
    # EDT-Former: 8 static + up to 8 local queries, frozen LLM
    llm, tok = copy.deepcopy(base[0]), copy.deepcopy(base[1])
    ids = freeze_llm(llm, tok)
    cc = ConnectorConfig(8, 8, qformer=QFormerConfig(hidden=64, layers=2, heads=4, ffn=128))
    edt = EDTFormer(EDTConnector(cc, 64), llm, tok.convert_tokens_to_ids(MOL), ids)
    edt_batch = collate(
        enc, list(range(batch_size)), encode_prompts(tok, qs, ys, 8), tok.pad_token_id
    )
    # LoRA r = 8 on the LLM, SMILES in the prompt
    llm2, tok2 = copy.deepcopy(base[0]), copy.deepcopy(base[1])
    ids2 = freeze_llm(llm2, tok2, lora_r=8)
    lora = EDTFormer(None, llm2, tok2.convert_tokens_to_ids(MOL), ids2)
    lora_batch = collate(
        enc,
        list(range(batch_size)),
        encode_prompts(tok2, qs, ys, 0, smiles, spaced),
        tok2.pad_token_id,
    )
    lora.train()
    edt.train()
    res = measure(
        {
            "edt-former": lambda: _step(edt, edt_batch),
            "lora-r8 + SMILES": lambda: _step(lora, lora_batch),
        },
        repeats=repeats,
        threads=1,
    )
    table = BenchTable(
        f"training step (forward + backward), batch {batch_size}, LLM {llm_name}",
        candidate="edt-former",
    )
    row = table.add(f"batch {batch_size}", res)
    row["molecules_per_s"] = {n: batch_size / m.median("cpu") for n, m in res.items()}
    for name, rate in row["molecules_per_s"].items():
        print(f"{name}: {rate:.1f} molecules/s (CPU)")
    params = {
        "edt-former": edt.trainable_parameters(),
        "lora-r8 + SMILES": lora.trainable_parameters(),
    }
    row["trainable_parameters"] = params
    print("trainable parameters:", params)
    return table, params


def bench_patching(n: int, repeats: int) -> BenchTable:
    vocab = AtomVocab()
    torch.manual_seed(0)
    model = build_entropy_model(vocab).eval()
    smiles = list(load("zinc-smiles", limit=n))

    def ours() -> None:
        e, mask = atom_entropies(model, vocab, smiles)
        entropy_group_ids(e, mask)

    def official() -> None:
        e, mask = atom_entropies(model, vocab, smiles)
        for i in range(len(smiles)):
            entropy_group_ids_reference(e[i, : int(mask[i].sum())])

    res = measure({"ours": ours, "official loop": official}, repeats=repeats, threads=1)
    table = BenchTable(
        f"entropy patching of {n} ZINC molecules (scoring + group ids)", candidate="ours"
    )
    row = table.add(f"{n} molecules", res)
    row["molecules_per_s"] = {name: n / m.median("cpu") for name, m in res.items()}
    for name, rate in row["molecules_per_s"].items():
        print(f"{name}: {rate:.0f} molecules/s (CPU)")
    return table


def main() -> None:
    p = bench_parser(__doc__ or "")
    p.add_argument("--llm", choices=("tiny", "smollm2"), default="tiny")
    a = p.parse_args()
    repeats = 3 if a.quick else a.repeats
    with torch.no_grad():
        patch = bench_patching(64 if a.quick else 512, repeats)
    train, _ = bench_training(a.llm, 8 if a.quick else 16, repeats)
    finish([train, patch], a.json)


if __name__ == "__main__":
    main()
