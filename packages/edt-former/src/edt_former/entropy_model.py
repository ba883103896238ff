"""The next-atom entropy model: a tiny GPT-2 over heavy-atom tokens, trained then frozen.

Architecture as ``runner/entropy_model/model.py::build_tiny_model``: 2 layers, 2 heads, width
128, 512 positions. Training is next-token prediction on ``[<bos>, atoms..., <eos>]``
(``runner/entropy_model/train.py``: lr 1e-4, weight decay 0.01, batch 64, one epoch; here
through `shared_core.train.fit` with the step count of the chosen scale).

Per-atom entropy (``entropy.score_batch`` then ``e[1:]`` in ``entropy_process``): the logits
at position ``t`` predict token ``t + 1``; position 0 is ``<bos>``, position ``k + 1`` is atom
``k``. Dropping the first prediction leaves, for atom ``k``, the entropy of the prediction
made *after reading atom k* (i.e. the uncertainty about what follows it). The official
comment says "drop <bos> and <eos>"; what it drops is the prediction made after ``<bos>``
(the uncertainty about atom 0), and the last kept value is the prediction of ``<eos>``.
`reference.atom_entropies_reference` recomputes it prefix by prefix; the tests pin it down.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch.nn import functional as F

from edt_former.atoms import AtomVocab, parse_smiles, tokenize_atoms


@dataclass(frozen=True)
class EntropyModelConfig:
    """The tiny GPT-2 (defaults: the official ``build_tiny_model``)."""

    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 128
    n_positions: int = 512


def build_entropy_model(vocab: AtomVocab, config: EntropyModelConfig | None = None) -> Any:
    """A randomly initialised `transformers.GPT2LMHeadModel` over `vocab` (no download)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    c = config or EntropyModelConfig()
    cfg = GPT2Config(
        vocab_size=len(vocab), n_positions=c.n_positions, n_layer=c.n_layer, n_head=c.n_head,
        n_embd=c.n_embd, bos_token_id=vocab.bos, eos_token_id=vocab.eos, pad_token_id=vocab.pad,
    )  # fmt: skip
    return GPT2LMHeadModel(cfg)


def encode_batch(
    smiles: list[str], vocab: AtomVocab, max_len: int = 512
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, mask)``, both ``(batch, T)``: ``[<bos>, atoms..., <eos>]`` right-padded with ``<pad>``."""
    if not isinstance(smiles, (list, tuple)) or not smiles:
        raise ValueError(f"smiles: expected a non-empty list of SMILES, got {smiles!r}")
    rows = [vocab.encode(s) for s in smiles]
    too_long = [len(r) for r in rows if len(r) > max_len]
    if too_long:
        raise ValueError(
            f"smiles: a molecule needs {max(too_long)} positions (atoms + 2) but the entropy "
            f"model has {max_len}"
        )
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), vocab.pad, dtype=torch.long)
    for b, r in enumerate(rows):
        ids[b, : len(r)] = torch.tensor(r)
    return ids, ids != vocab.pad


def next_token_loss(model: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Mean cross-entropy of the next token over real positions (`fit`'s ``loss_fn``)."""
    ids, mask = batch["ids"], batch["mask"]
    logits = model(input_ids=ids, attention_mask=mask.long()).logits[:, :-1]
    target = ids[:, 1:].masked_fill(~mask[:, 1:], -100)
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=-100
    )


def entropy_bits(logits: torch.Tensor) -> torch.Tensor:
    """Shannon entropy (bits) of ``softmax(logits)`` over the last axis."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).sum(-1) / math.log(2.0)


SIGNALS = ("entropy", "surprisal")


def surprisal_bits(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``-log2 softmax(logits)[target]``: logits ``(..., V)``, targets ``(...)`` -> ``(...)``."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1) / math.log(2.0)


@torch.no_grad()
def atom_entropies(
    model: Any,
    vocab: AtomVocab,
    smiles: list[str],
    batch_size: int = 256,
    signal: str = "entropy",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-atom signal in bits: atom ``k`` gets the prediction made after reading it.

    ``signal="entropy"`` (the official code's ``entropy.score_batch``): H(next | <bos>,
    atom_0..atom_k). ``signal="surprisal"`` (the paper note's ``e_t = -log p_t``, "the negative
    log-likelihood of the actual next atom"): ``-log2 p(a_{k+1} | <bos>, atom_0..atom_k)``,
    the last atom's next token being ``<eos>``; the entropy is its expectation.

    Returns ``(signal (batch, atoms_max), mask (batch, atoms_max))`` (padding: 0, False).
    Every SMILES is checked as `parse_smiles` checks it (valid, heavy atoms aligned with the
    tokens), so an entropy row always belongs to a molecule the graph side can encode.
    """
    if isinstance(smiles, str) or not isinstance(smiles, list | tuple):
        raise TypeError(f"smiles: expected a list of SMILES strings, got {type(smiles).__name__}")
    if signal not in SIGNALS:
        raise ValueError(f"signal: expected one of {SIGNALS}, got {signal!r}")
    for i, s in enumerate(smiles):
        try:
            parse_smiles(s)
        except (TypeError, ValueError) as err:
            raise type(err)(f"smiles[{i}]: {str(err).removeprefix('smiles: ')}") from None
    model.eval()
    device = next(model.parameters()).device
    n_atoms = [len(tokenize_atoms(s)) for s in smiles]
    width = max(n_atoms) if n_atoms else 0
    out = torch.zeros((len(smiles), width))
    for start in range(0, len(smiles), batch_size):
        chunk = smiles[start : start + batch_size]
        ids, mask = encode_batch(chunk, vocab, model.config.n_positions)
        logits = model(input_ids=ids.to(device), attention_mask=mask.long().to(device)).logits
        if signal == "entropy":
            e = entropy_bits(logits).cpu()  # (b, T): entropy of the prediction made at t
        else:  # -log2 p of the token actually at t + 1 (the last column is never read)
            nxt = torch.cat([ids[:, 1:], ids[:, -1:]], dim=1).to(logits.device)
            e = surprisal_bits(logits, nxt).cpu()
        for i, n in enumerate(n_atoms[start : start + batch_size]):
            out[start + i, :n] = e[i, 1 : n + 1]  # positions 1..n hold atoms 0..n-1
    mask = torch.arange(width)[None, :] < torch.tensor(n_atoms)[:, None]
    return out, mask


def train_entropy_model(
    smiles: list[str],
    vocab: AtomVocab,
    *,
    steps: int,
    batch_size: int = 64,
    lr: float = 1e-3,
    seed: int = 0,
    config: EntropyModelConfig | None = None,
    device: str = "cpu",
) -> Any:
    """Train the tiny GPT-2 by next-atom prediction through `shared_core.train.fit`; frozen."""
    from shared_core.device import seed_everything
    from shared_core.train import TrainConfig, fit, step_generator

    if not smiles:
        raise ValueError("smiles: expected at least one training molecule")
    seed_everything(seed)
    model = build_entropy_model(vocab, config)
    ids, mask = encode_batch(list(smiles), vocab, model.config.n_positions)

    def batch_fn(step: int) -> dict[str, torch.Tensor]:
        idx = torch.randint(len(ids), (batch_size,), generator=step_generator(seed, step))
        width = int(mask[idx].sum(1).max())
        return {"ids": ids[idx, :width], "mask": mask[idx, :width]}

    cfg = TrainConfig(steps=steps, lr=lr, warmup=max(1, steps // 20), weight_decay=0.01)
    fit(
        model,
        next_token_loss,
        batch_fn,
        cfg,
        desc="entropy model",
        show_progress=False,
        device=device,
    )
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model
