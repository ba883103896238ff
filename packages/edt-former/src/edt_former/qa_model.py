"""EDT-Former on a user's own (SMILES, question, answer) data: one object that answers.

`EDTFormerQA` holds every part a question needs: the atom vocabulary and next-atom entropy
model (the patches), the GIN (node features), the connector (`Bridge`: static + entropy/BRICS
queries, Q-Former, projection, and the embedding rows of the added tokens) and the frozen LLM
with its tokenizer. Its checkpoint folder (`shared_core.hub.save_folder`) keeps the trained
parts and a *reference* to the LLM (a folder path or ``"smollm2"``) with a fingerprint of
its embedding table, so a folder is a few MB and refuses to load on another LLM.

Answers are free text: the training loss is the cross-entropy of the answer tokens and the
end-of-sequence token (the paper's downstream generative loss, "cross-entropy for QA"), and
`EDTFormerQA.answer` decodes greedily. Only `Bridge` trains; the graph encoder, the entropy
model and the LLM are frozen (paper note, "Frozen Backbone, Trainable Connector").
"""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from edt_former.atoms import AtomVocab
from edt_former.data import Encoded
from edt_former.encoder import GIN, FrozenGIN, GINConfig
from edt_former.entropy_model import EntropyModelConfig, build_entropy_model
from edt_former.model import IGNORE, MOL, NEW_TOKENS, ConnectorConfig, EDTConnector, inject_queries
from edt_former.patching import PEAK_DELTA, PEAK_GAMMA
from edt_former.qformer import QFormerConfig

ENTROPY_WEIGHTS = "entropy_model.safetensors"
"""The next-atom GPT-2 (tied embeddings: written with safetensors' ``save_model``)."""
PATCH_RULES = ("percentile", "peak")


@dataclass(frozen=True)
class QAModelConfig:
    """Everything that rebuilds an `EDTFormerQA` (its config.json).

    `llm` is the LLM reference (a folder, or a `shared_core.models` name such as
    ``"smollm2"``); `llm_fingerprint` the SHA-256 of its input embedding table before the
    ``<mol>`` tokens were added, checked at load. `patching`: ``"percentile"`` (the official
    code's 75th-percentile rule, the package default) or ``"peak"`` (the paper text's rule).
    """

    llm: str = "smollm2"
    llm_fingerprint: str = ""
    llm_width: int = 576
    connector: ConnectorConfig = field(default_factory=ConnectorConfig)
    gin: GINConfig = field(default_factory=GINConfig)
    entropy_model: EntropyModelConfig = field(default_factory=EntropyModelConfig)
    patching: str = "percentile"
    entropy_quantile: float = 0.75
    peak_delta: int = PEAK_DELTA
    peak_gamma: float = PEAK_GAMMA
    max_prompt_tokens: int = 256

    def __post_init__(self) -> None:
        if self.patching not in PATCH_RULES:
            raise ValueError(f"patching: expected one of {PATCH_RULES}, got {self.patching!r}")
        if not isinstance(self.llm_width, int) or self.llm_width < 1:
            raise ValueError(f"llm_width: expected an int >= 1, got {self.llm_width!r}")


def embedding_fingerprint(llm: Any) -> str:
    """SHA-256 (first 16 hex digits) of the LLM's input embedding table, float32 bytes."""
    w = llm.get_input_embeddings().weight.detach().to(torch.float32).cpu().contiguous()
    return hashlib.sha256(w.numpy().tobytes()).hexdigest()[:16]


class Bridge(nn.Module):
    """The trainable connector: queries + Q-Former (`EDTConnector`), the projection into the
    LLM's embedding space, and the embedding rows of `NEW_TOKENS` ``(3, llm_width)``.

    The rows live here rather than in the LLM's table, which stays frozen and unregistered:
    the same update as `model.unlock_new_token_embeddings` (only those rows train, no weight
    decay, initialised at the mean of the old rows), with a state dict of the connector only.
    """

    def __init__(self, connector: ConnectorConfig, node_dim: int, llm_width: int) -> None:
        super().__init__()
        self.connector = EDTConnector(connector, node_dim)
        self.llm_proj = nn.Linear(connector.qformer.hidden, llm_width)
        self.new_rows = nn.Parameter(torch.zeros(len(NEW_TOKENS), llm_width))
        self.new_rows._no_weight_decay = True  # type: ignore[attr-defined]


class EDTFormerQA:
    """A molecule question answerer: ``answer(smiles, questions) -> answers``.

    Build one with `EDTFormerQA.build` (untrained connector, frozen parts given) or load one
    with `EDTFormerQA.from_pretrained`. The prompt of a row is ``question : <question>
    molecule : <mol_start><mol>*n_static<mol_end> answer :``, the local (entropy / BRICS)
    query outputs inserted after the last ``<mol>`` (`model.inject_queries`).
    """

    def __init__(
        self,
        config: QAModelConfig,
        llm: Any,
        tokenizer: Any,
        entropy_model: Any,
        gin: GIN,
        vocab: AtomVocab | None = None,
    ) -> None:
        self.config = config
        self.vocab = vocab or AtomVocab()
        self.entropy_model = entropy_model.eval()
        self.gin = FrozenGIN(gin)
        for p in llm.parameters():
            p.requires_grad_(False)
        self.llm = llm.eval()
        self.tokenizer = tokenizer
        tokenizer.add_special_tokens({"additional_special_tokens": list(NEW_TOKENS)})
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        if tokenizer.eos_token_id is None:
            raise ValueError("tokenizer: the LLM's tokenizer has no end-of-sequence token")
        self.new_ids = [int(tokenizer.convert_tokens_to_ids(t)) for t in NEW_TOKENS]
        self.mol_id = self.new_ids[NEW_TOKENS.index(MOL)]
        table = llm.get_input_embeddings().weight
        if table.shape[1] != config.llm_width:
            raise ValueError(
                f"llm: its embeddings are {table.shape[1]} wide, the config says "
                f"{config.llm_width}; load the LLM this checkpoint was trained with"
            )
        self.bridge = Bridge(config.connector, gin.dim, config.llm_width)
        with torch.no_grad():  # official init="mean": the new rows start at the mean token
            self.bridge.new_rows.copy_(
                table.detach().float().mean(0).expand_as(self.bridge.new_rows)
            )

    # -------------------------------------------------------------------------------------
    # building blocks

    def encode(self, smiles: Sequence[str]) -> Encoded:
        """Node features, BRICS fragments and entropy patches of `smiles` (frozen parts)."""
        from edt_former.entropy_model import atom_entropies
        from edt_former.patching import brics_group_ids, entropy_group_ids, peak_group_ids
        from shared_core.data import mol_graph

        smiles = list(smiles)
        ent, mask = atom_entropies(self.entropy_model, self.vocab, smiles)
        n = mask.sum(1).tolist()
        c = self.config
        if c.patching == "peak":
            gids = peak_group_ids(ent, mask, c.peak_delta, c.peak_gamma)
        else:
            gids = entropy_group_ids(ent, mask, c.entropy_quantile)
        return Encoded(
            nodes=self.gin.encode([mol_graph(s) for s in smiles]),
            brics=[brics_group_ids(s) for s in smiles],
            entropy=[gids[i, : n[i]].numpy() for i in range(len(smiles))],
        )

    def prompt(self, question: str) -> str:
        """The text before the answer (``<mol>`` slots for the static queries)."""
        n = self.config.connector.n_static
        mol = "<mol_start>" + MOL * n + "<mol_end>"
        return f"question : {question.strip()} molecule : {mol} answer :"

    def token_rows(
        self, questions: Sequence[str], answers: Sequence[str] | None = None
    ) -> tuple[list[list[int]], list[int]]:
        """Token ids of ``prompt [+ " answer" + eos]`` per row, and each row's answer length
        (answer tokens + eos; 0 without answers)."""
        tok = self.tokenizer
        rows, n_answer = [], []
        for i, q in enumerate(questions):
            ids = list(tok(self.prompt(q), add_special_tokens=False)["input_ids"])
            if len(ids) > self.config.max_prompt_tokens:
                raise ValueError(
                    f"questions[{i}]: the prompt is {len(ids)} tokens, above max_prompt_tokens "
                    f"= {self.config.max_prompt_tokens}; shorten the question"
                )
            if answers is None:
                rows.append(ids)
                n_answer.append(0)
                continue
            ans = [*tok(" " + answers[i].strip(), add_special_tokens=False)["input_ids"]]
            rows.append([*ids, *ans, int(tok.eos_token_id)])
            n_answer.append(len(ans) + 1)
        return rows, n_answer

    def batch(
        self, enc: Encoded, mols: Sequence[int], rows: Sequence[list[int]], n_answer: Sequence[int]
    ) -> dict[str, torch.Tensor]:
        """One right-padded batch; labels on the last `n_answer[b]` tokens of row ``b``."""
        from edt_former.data import collate

        pad = int(self.tokenizer.pad_token_id)
        b = collate(enc, mols, rows, pad)
        labels = torch.full_like(b["input_ids"], IGNORE)
        for i, (r, k) in enumerate(zip(rows, n_answer, strict=True)):
            if k:
                labels[i, len(r) - k : len(r)] = torch.tensor(r[len(r) - k :])
        return {**b, "labels": labels}

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Token embeddings ``(..., llm_width)``: the frozen table, the bridge's rows for the
        added tokens (ids beyond the frozen table's size read those rows only)."""
        table = self.llm.get_input_embeddings()
        n_old = table.weight.shape[0]
        new = torch.zeros_like(ids)
        is_new = torch.zeros_like(ids, dtype=torch.bool)
        for j, t in enumerate(self.new_ids):
            new = torch.where(ids == t, j, new)
            is_new |= ids == t
        base = table(ids.clamp(max=n_old - 1))
        rows = self.bridge.new_rows[new].to(base.dtype)
        return torch.where(is_new[..., None], rows, base)

    def inputs(self, batch: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(inputs_embeds (B, T', d), attention_mask (B, T'), labels (B, T'))`` with the
        query outputs in the ``<mol>`` slots and the local ones after the last."""
        dev = self.bridge.new_rows.device
        batch = {k: v.to(dev) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
        ids, attn, labels = batch["input_ids"], batch["attention_mask"], batch["labels"]
        out, qm = self.bridge.connector(batch)
        q = self.bridge.llm_proj(out)
        n_static = self.config.connector.n_static
        return inject_queries(self.embed(ids), ids, attn, labels, q, qm, self.mol_id, n_static)

    def to(self, device: str | torch.device) -> EDTFormerQA:
        """Move the bridge and the LLM (the encoders stay on the CPU, where they encode)."""
        self.bridge.to(device)
        self.llm.to(device)
        return self

    def loss(self, batch: Mapping[str, Any]) -> torch.Tensor:
        """Mean cross-entropy of the answer and eos tokens (next-token shifted)."""
        embeds, attn, labels = self.inputs(batch)
        logits = self.llm(inputs_embeds=embeds, attention_mask=attn).logits[:, :-1]
        target = labels[:, 1:]
        return F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]).float(), target.reshape(-1), ignore_index=IGNORE
        )

    # -------------------------------------------------------------------------------------
    # answering

    @torch.no_grad()
    def answer(
        self, smiles: Sequence[str], questions: Sequence[str], max_new_tokens: int = 16
    ) -> list[str]:
        """Greedy answers, one per (molecule, question) row, stopping at the eos token."""
        if len(smiles) != len(questions):
            raise ValueError(
                f"questions: expected {len(smiles)} (one per SMILES), got {len(questions)}"
            )
        if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens: expected an int >= 1, got {max_new_tokens!r}")
        self.bridge.eval()
        enc = self.encode(smiles)
        rows, n_answer = self.token_rows(questions)
        eos = int(self.tokenizer.eos_token_id)
        # the KV cache's keyword: `cache` from transformers 5.x, `past_key_values` before
        kv = (
            "cache"
            if "cache" in inspect.signature(self.llm.forward).parameters
            else "past_key_values"
        )
        out = []
        for i in range(len(rows)):
            b = self.batch(enc, [i], rows[i : i + 1], n_answer[i : i + 1])
            embeds, attn, _ = self.inputs(b)
            res = self.llm(inputs_embeds=embeds, attention_mask=attn, use_cache=True)
            generated: list[int] = []
            for _ in range(max_new_tokens):
                nxt = int(res.logits[0, -1].argmax())
                if nxt == eos:
                    break
                generated.append(nxt)
                attn = torch.cat([attn, attn.new_ones((1, 1))], dim=1)
                res = self.llm(
                    inputs_embeds=self.embed(torch.tensor([[nxt]], device=attn.device)),
                    attention_mask=attn,
                    use_cache=True,
                    **{kv: getattr(res, kv)},
                )
            out.append(self.tokenizer.decode(generated, skip_special_tokens=True).strip())
        return out

    # -------------------------------------------------------------------------------------
    # checkpoint folder

    def save_pretrained(
        self,
        directory: str | os.PathLike[str],
        *,
        metrics: Mapping[str, float | int | str] | None = None,
        command: str | Sequence[str] | None = None,
        data: Sequence[str | os.PathLike[str]] | None = None,
    ) -> Path:
        """Write the checkpoint folder atomically (`shared_core.hub.save_folder`).

        config.json (`QAModelConfig`, with the LLM reference), model.safetensors (the bridge,
        ``bridge.*``, and the GIN, ``gin.*``), entropy_model.safetensors, provenance.json
        (`command`, `data` with SHA-256, `metrics`) and a README.md model card. The LLM's
        own weights are not copied.
        """
        from safetensors.torch import save_file, save_model

        from shared_core.hub import WEIGHTS, save_folder

        state = {f"bridge.{k}": v for k, v in self.bridge.state_dict().items()}
        state |= {f"gin.{k}": v for k, v in self.gin.model.state_dict().items()}
        state = {k: v.detach().cpu().contiguous() for k, v in state.items()}

        def save(tmp: Path, provenance: Mapping[str, Any]) -> None:
            save_file(state, str(tmp / WEIGHTS), metadata={"format": "pt"})
            save_model(self.entropy_model, str(tmp / ENTROPY_WEIGHTS))

        return save_folder(
            directory, save, owner=EDTFormerQA, config=self.config,
            metrics=metrics, command=command, data=data, distribution="edt-former",
        )  # fmt: skip

    @classmethod
    def from_pretrained(
        cls, directory: str | os.PathLike[str], *, llm: str | os.PathLike[str] | None = None
    ) -> EDTFormerQA:
        """Load a folder `save_pretrained` wrote; the LLM from its reference (or `llm`).

        FileNotFoundError: no folder or a missing file; ValueError naming the folder: another
        package's or class's folder, a newer edt-former, a truncated or corrupt file, or an
        LLM whose embedding table differs from the one the connector was trained on.
        """
        from safetensors.torch import load_file, load_model

        from shared_core.finetune import load_causal_lm
        from shared_core.hub import WEIGHTS, load_folder

        p = Path(directory)
        config, _ = load_folder(p, EDTFormerQA, QAModelConfig, distribution="edt-former")
        model, tok = load_causal_lm(llm if llm is not None else config.llm)
        found = embedding_fingerprint(model)
        if config.llm_fingerprint and found != config.llm_fingerprint:
            raise ValueError(
                f"{p}: the LLM {llm or config.llm!r} has embedding fingerprint {found}; the "
                f"connector was trained on {config.llm_fingerprint}; pass the LLM it was trained with"
            )
        state = load_file(str(p / WEIGHTS))
        gin = GIN(config.gin)
        ent = build_entropy_model(AtomVocab(), config.entropy_model)
        try:
            load_model(ent, str(p / ENTROPY_WEIGHTS))
            gin.load_state_dict(_prefixed(state, "gin."))
            qa = cls(config, model, tok, ent, gin)
            qa.bridge.load_state_dict(_prefixed(state, "bridge."))
        except (RuntimeError, OSError) as e:
            raise ValueError(f"{p}: cannot load its weights ({type(e).__name__}: {e})") from None
        qa.bridge.eval()
        return qa


def _prefixed(state: Mapping[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    return {k.removeprefix(prefix): v for k, v in state.items() if k.startswith(prefix)}


def descriptor_targets(smiles: Sequence[str]) -> np.ndarray:
    """RDKit descriptors ``(molecules, 8)`` the GIN regresses on a user's molecules (the
    bundled QM9 targets do not cover them): exact weight, Crippen logP, TPSA, H donors / acceptors,
    rotatable bonds, rings, aromatic rings."""
    from rdkit.Chem import rdMolDescriptors

    from edt_former.atoms import parse_smiles

    rows = []
    for s in smiles:
        m = parse_smiles(s)
        rows.append([
            rdMolDescriptors.CalcExactMolWt(m), rdMolDescriptors.CalcCrippenDescriptors(m)[0],
            rdMolDescriptors.CalcTPSA(m),
            rdMolDescriptors.CalcNumHBD(m), rdMolDescriptors.CalcNumHBA(m),
            rdMolDescriptors.CalcNumRotatableBonds(m), rdMolDescriptors.CalcNumRings(m),
            rdMolDescriptors.CalcNumAromaticRings(m),
        ])  # fmt: skip
    return np.asarray(rows, dtype=np.float64)


DESCRIPTORS = ("MolWt", "MolLogP", "TPSA", "HBD", "HBA", "RotatableBonds", "Rings", "AromaticRings")
"""The columns of `descriptor_targets`."""


def default_qformer(hidden: int, layers: int) -> QFormerConfig:
    """The Q-Former of the package's experiments at a width: 4 heads, FFN twice as wide."""
    return QFormerConfig(hidden=hidden, layers=layers, heads=4, ffn=2 * hidden)
