"""The verbs on a user's own preference data: ``augment``, ``train``, ``score``, ``evaluate``.

Input files are JSONL (or JSON/Parquet) rows with ``prompt``, ``chosen``, ``rejected`` and
optionally ``label`` (``preference`` or ``tie``) and ``provenance`` (what `augment` writes).
`augment` asks an oracle (``--oracle``: the synthetic world's exact oracle ``world``, the
offline ``smollm2``, a local transformers causal-LM folder, or an OpenAI-compatible
``http(s)://`` URL with ``--oracle-model``) for rubrics and rewrites; every answered call is
cached on disk (``--cache``, default ``<out>.oracle_cache``), so a killed run re-uses them.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crome.data import PairRow, read_pairs, write_pairs
from shared_core.cli import UsageError
from shared_core.verbs import VerbArgs

if TYPE_CHECKING:
    from crome.model import RewardModel, RewardScorer
    from crome.oracle import Oracle
    from crome.sequence_model import SequenceRewardModel
    from crome.train import TrainConfig

TIE_BAND = 0.1
"""A tie pair counts as right when |sigmoid(margin) - 1/2| <= TIE_BAND (the paper's delta)."""


def read_rows(path: Path, skip_invalid: bool = False) -> list[PairRow]:
    """The pair rows of `path`; a ``.jsonl`` line that is not JSON or lacks a field is one
    error naming the file and line (or skipped with `skip_invalid`)."""
    from shared_core.data import read_jsonl

    try:
        if path.suffix != ".jsonl" or not skip_invalid:
            return read_pairs(path)
        res = read_jsonl(path, format="preference", skip_invalid=True)
        if res.n_skipped:
            print(f"skipped {res.n_skipped} invalid line(s) of {path}", file=sys.stderr)
        return [
            PairRow.from_dict(d, where=f"{path.name} line {n}")
            for d, n in zip(res.records, res.lines, strict=True)
        ]
    except (ValueError, TypeError) as e:
        msg = str(e)
        raise UsageError(msg if str(path) in msg else f"--data: {path}: {msg}") from None


def _load_model(folder: Path, flag: str = "--checkpoint") -> RewardModel | SequenceRewardModel:
    """The reward model of a folder `crome train` wrote (either kind, `load_reward_model`)."""
    try:
        return load_reward_model(folder)
    except ValueError as e:
        raise UsageError(f"{flag}: {e}") from None


def load_reward_model(folder: str | Path) -> RewardModel | SequenceRewardModel:
    """A saved reward model: a `SequenceRewardModel` folder (reward_config.json beside the
    transformers files) or a `RewardModel` folder (an encoder with a mean-pooled head)."""
    from crome.model import RewardModel
    from crome.sequence_model import SequenceRewardModel, is_sequence_folder

    if is_sequence_folder(folder):
        return SequenceRewardModel.from_pretrained(folder)
    return RewardModel.from_pretrained(folder)


def _need_checkpoint(args: VerbArgs) -> Path:
    if args.checkpoint is None:
        raise UsageError(f"--checkpoint: {args.command} needs a folder written by `crome train`")
    return args.checkpoint


def score(args: VerbArgs) -> int:
    """Rewards of each row's two answers and their margin, as CSV (``--out`` or stdout)."""
    from shared_core.atomic import atomic_path
    from shared_core.device import resolve_device
    from shared_core.progress import phase, plan

    plan(["load", "score"])
    phase("load")
    model = _load_model(_need_checkpoint(args)).to(resolve_device(args.device))
    rows = read_rows(args.data[0], args.skip_invalid)
    phase("score")
    q = [r.prompt for r in rows]
    chosen = model.score(q, [r.chosen for r in rows]).tolist()
    rejected = model.score(q, [r.rejected for r in rows]).tolist()
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["row", "label", "provenance", "reward_chosen", "reward_rejected", "margin"])
    for i, (r, a, b) in enumerate(zip(rows, chosen, rejected, strict=True)):
        w.writerow([i, r.label, r.provenance, f"{a:.6g}", f"{b:.6g}", f"{a - b:.6g}"])
    if args.out is None:
        print(buf.getvalue(), end="")
    else:
        with atomic_path(args.out) as tmp:
            tmp.write_text(buf.getvalue(), encoding="utf-8")
        print(f"wrote {len(rows)} rows to {args.out}")
    return 0


def pair_metrics(model: RewardScorer, rows: Sequence[PairRow]) -> dict[str, float | int]:
    """Pairwise accuracy (margin > 0) over preference rows, overall and per provenance
    (``original``, ``causal-upgrade``, ``causal-degrade``), and for tie rows (neutrals) the
    fraction within the tie band and the mean |margin|, overall and per provenance."""
    import numpy as np

    m = model.margins(
        [r.prompt for r in rows], [r.chosen for r in rows], [r.rejected for r in rows]
    ).numpy()
    pref = np.array([r.label == "preference" for r in rows])
    prov = np.array([r.provenance for r in rows])
    out: dict[str, float | int] = {"pairs": len(rows)}
    if pref.any():
        out["accuracy"] = float((m[pref] > 0).mean())
        for p in dict.fromkeys(prov[pref].tolist()):
            out[f"accuracy/{p}"] = float((m[pref & (prov == p)] > 0).mean())
    tie = ~pref
    if tie.any():
        near = np.abs(1.0 / (1.0 + np.exp(-m)) - 0.5) <= TIE_BAND
        out["tie_accuracy"] = float(near[tie].mean())
        out["tie_abs_margin"] = float(np.abs(m[tie]).mean())
        for p in dict.fromkeys(prov[tie].tolist()):
            sel = tie & (prov == p)
            out[f"tie_accuracy/{p}"] = float(near[sel].mean())
    return out


def evaluate(args: VerbArgs) -> int:
    """`pair_metrics` of each ``--data`` file, printed as JSON (and written to ``--out``)."""
    from shared_core.atomic import atomic_write_json
    from shared_core.device import resolve_device
    from shared_core.progress import phase, plan

    plan(["load", *(f"evaluate {p.name}" for p in args.data)])
    phase("load")
    model = _load_model(_need_checkpoint(args)).to(resolve_device(args.device))
    results = {}
    for path in args.data:
        phase(f"evaluate {path.name}")
        results[str(path)] = pair_metrics(model, read_rows(path, args.skip_invalid))
    print(json.dumps(results, indent=2))
    if args.out is not None:
        atomic_write_json(args.out, results)
    return 0


def new_reward_model(
    spec: str, max_length: int, lora: tuple[int, int] | None = None
) -> RewardModel | SequenceRewardModel:
    """A fresh reward model on `spec` (``--model``): ``minilm`` or an encoder folder (a
    `RewardModel`: mean pooling, linear head), ``smollm2`` or a causal-LM folder (a
    `SequenceRewardModel`: last token, ``score`` head), with a LoRA adapter ``(r, alpha)``
    (causal LMs only)."""
    from crome.model import RewardModel, minilm_path
    from crome.sequence_model import SequenceRewardModel

    if spec == "smollm2" or _is_causal_lm(Path(spec)):
        try:
            sequence_model = SequenceRewardModel.from_causal_lm(spec, max_length)
        except (ValueError, OSError) as e:
            raise UsageError(f"--model: {spec} does not load as a causal LM ({e})") from None
        if lora is not None:
            sequence_model.add_lora(*lora)
        return sequence_model
    if lora is not None:
        raise UsageError(
            f"--lora: only on a causal LM (smollm2 or a *ForCausalLM folder), not {spec}"
        )
    folder = minilm_path() if spec == "minilm" else Path(spec)
    if not folder.is_dir():
        raise FileNotFoundError(f"--model: no folder {folder}; expected a model folder")
    try:
        return RewardModel.from_backbone(folder, max_length=max_length)
    except (ValueError, OSError, KeyError) as e:
        raise UsageError(f"--model: {folder} is not an encoder folder ({e})") from None


def _is_causal_lm(folder: Path) -> bool:
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return False
    names = config.get("architectures") or []
    return any(str(a).endswith(("ForCausalLM", "LMHeadModel")) for a in names)


def _grad_norm(model: Any) -> float:
    """The 2-norm of every gradient on `model` (after DDP's averaging: the same on each rank)."""
    import torch

    grads = [p.grad.detach().float().norm() for p in model.parameters() if p.grad is not None]
    return float(torch.stack(grads).norm()) if grads else 0.0


def schedule(
    cfg: TrainConfig, extra: Mapping[str, Any], rows: int, processes: int = 1
) -> TrainConfig:
    """`cfg` with the optimisation flags of `shared_core.finetune.add_schedule_flags` applied
    (a flag left out keeps the config's value, ``--set`` included):

    - ``--max-steps N``: ``steps = N``; else ``--epochs E``: ``steps = ceil(E * rows /
      batch_size)`` (`batch_size` is the global batch);
    - ``--lr``: ``lr_encoder``, the rate of the model's weights (or of its LoRA adapter); the
      fresh head keeps ``lr_head``;
    - ``--grad-accum K``: ``grad_accum``, each step's batch in K micro-batches per process;
    - ``--bf16``: ``bf16`` (bfloat16 autocast; fp32 without it).
    """
    import math

    changes: dict[str, Any] = {}
    if extra.get("max_steps") is not None:
        if extra["max_steps"] < 1:
            raise UsageError(f"--max-steps: expected an integer >= 1, got {extra['max_steps']}")
        changes["steps"] = int(extra["max_steps"])
    elif extra.get("epochs") is not None:
        epochs = float(extra["epochs"])
        if not (math.isfinite(epochs) and epochs > 0):
            raise UsageError(f"--epochs: expected a finite number > 0, got {extra['epochs']}")
        changes["steps"] = max(1, math.ceil(epochs * rows / cfg.batch_size))
    if extra.get("lr") is not None:
        if not (math.isfinite(extra["lr"]) and extra["lr"] > 0):
            raise UsageError(f"--lr: expected a finite number > 0, got {extra['lr']}")
        changes["lr_encoder"] = float(extra["lr"])
    if extra.get("grad_accum") is not None:
        changes["grad_accum"] = int(extra["grad_accum"])
    if extra.get("bf16"):
        changes["bf16"] = True
    out = replace(cfg, **changes)
    per_process = min(out.batch_size, rows) // processes
    if out.grad_accum > per_process:
        raise UsageError(
            f"--grad-accum: expected at most {per_process} micro-batches (the rows of a batch "
            f"per process: batch_size {out.batch_size}, {rows} rows, {processes} process(es)), "
            f"got {out.grad_accum}"
        )
    return out


def train(args: VerbArgs) -> int:
    """Train a reward model (Bradley-Terry on preference rows + the tie loss on tie rows)
    from ``--model`` (`new_reward_model`; ``--lora r,alpha`` for a causal LM) or
    ``--checkpoint``; save it at --out with training_log.json (loss and gradient norm of
    every step) and training_config.json (`--merge`: the adapter merged into the weights).

    The training state is saved every ``checkpoint_every`` steps (``--set checkpoint_every=N``)
    in ``<out>.partial/``; ``--resume`` continues a killed run from there. Under
    ``torchrun --nproc_per_node N`` each process takes 1/N of every batch (``batch_size`` is
    the global batch) and the main process writes the folder. ``--max-steps`` / ``--epochs``,
    ``--lr``, ``--grad-accum`` and ``--bf16`` map onto `TrainConfig` (`schedule`).
    """
    from crome.sequence_model import SequenceRewardModel
    from crome.train import train_reward_model
    from shared_core.device import seed_everything
    from shared_core.distributed import is_main
    from shared_core.progress import phase, plan

    cfg: TrainConfig = args.config
    cfg = replace(cfg, seed=args.seed, device=args.device)
    lora, merge = args.extra.get("lora"), bool(args.extra.get("merge"))
    if merge and not lora:
        raise UsageError("--merge: only with --lora (without it the full weights are saved)")
    if lora and args.checkpoint is not None:
        raise UsageError(
            "--lora: starts from --model; --checkpoint continues a saved model as it is"
        )
    plan(["load", "train", "save"])
    phase("load")
    rows = read_rows(args.data[0], args.skip_invalid)
    cfg = schedule(cfg, args.extra, len(rows), int(os.environ.get("WORLD_SIZE", "1")))
    if args.checkpoint is not None:
        model = _load_model(args.checkpoint)
    else:
        spec = str(args.extra.get("model") or "minilm")
        seed_everything(args.seed)  # the LoRA adapter's random init: one per --seed
        model = new_reward_model(spec, int(args.extra["max_length"]), lora)
    assert args.out is not None
    # the training state lives beside --out (the checkpoint folder is written atomically at
    # the end); --resume continues from it, a fresh run discards it
    partial = args.out.with_name(args.out.name + ".partial")
    main_process = is_main()
    if main_process and partial.exists() and not args.resume:
        shutil.rmtree(partial)
    partial.mkdir(parents=True, exist_ok=True)
    phase("train")

    def log_grad_norm(step: int, record: dict[str, float]) -> None:
        record["grad_norm"] = _grad_norm(model)

    history = train_reward_model(
        model, rows, cfg, checkpoint=partial / "resume.pt", callback=log_grad_norm
    )
    if not main_process:
        return 0
    phase("save")
    metrics = {"final_loss": history[-1]["loss"], "steps": len(history), "pairs": len(rows)}
    flags = {k: (str(v) if isinstance(v, Path) else v) for k, v in args.extra.items()}
    files = {
        "training_log.json": history,
        "training_config.json": {"train": asdict(cfg), "flags": flags, "seed": args.seed},
    }
    if isinstance(model, SequenceRewardModel):
        model.save_pretrained(
            args.out, merge=merge, metrics=metrics, data=[args.data[0]], files=files
        )
    else:
        model.save_pretrained(args.out, metrics=metrics, data=[args.data[0]], files=files)
    shutil.rmtree(partial)
    print(json.dumps(metrics))
    return 0


def make_oracle(spec: str, cache: Path, oracle_model: str | None, seed: int) -> Oracle:
    """The oracle `spec` names: ``world``, ``smollm2``, a local causal-LM folder or a URL."""
    from crome.cache import OracleCache
    from crome.oracle import LLMOracle, OpenAIBackend, ProgrammaticOracle, TransformersBackend

    if spec == "world":
        return ProgrammaticOracle(seed=seed)
    backend: Any
    if spec == "smollm2":
        backend = TransformersBackend.smollm2()
    elif spec.startswith(("http://", "https://")):
        if not oracle_model:
            raise UsageError("--oracle-model: a URL oracle needs the served model's name")
        backend = OpenAIBackend(spec, oracle_model)
    elif Path(spec).is_dir():
        try:
            backend = TransformersBackend.from_pretrained(spec)
        except (ValueError, OSError) as e:
            raise UsageError(f"--oracle: {spec} is not a causal LM folder ({e})") from None
    else:
        raise UsageError(
            f"--oracle: expected world, smollm2, a model folder or an http(s) URL, got {spec!r}"
        )
    return LLMOracle(backend, cache=OracleCache(cache))


def augment(args: VerbArgs) -> int:
    """Write the original rows plus their causal and neutral augmentations to ``--out``."""
    from crome import augmentation as A
    from shared_core.progress import phase, plan

    assert args.out is not None
    if args.out.suffix not in (".jsonl", ".parquet"):
        raise UsageError(f"--out: expected a .jsonl or .parquet file, got {args.out.name!r}")
    plan(["load", "augment", "write"])
    phase("load")
    rows = read_rows(args.data[0], args.skip_invalid)
    if len({r.prompt for r in rows}) < 2:
        raise UsageError(f"--data: {args.data[0]} needs at least two distinct prompts")
    spec = str(args.extra["oracle"])
    cache = args.extra.get("cache") or args.out.with_name(args.out.name + ".oracle_cache")
    oracle = make_oracle(spec, Path(cache), args.extra.get("oracle_model"), args.seed)
    world = spec == "world"
    config = A.AugmentConfig(max_rubrics=int(args.extra["max_rubrics"]), seed=args.seed)
    phase("augment")
    aug, stats = A.augment(
        rows,
        oracle,
        config,
        verify=A.world_verifier if world else A.basic_verifier,
        irrelevant=A.world_irrelevant if world else None,
    )
    phase("write")
    write_pairs(args.out, [*rows, *aug])
    cached = getattr(oracle, "cache", None)
    counts: dict[str, int] = {}
    for r in aug:
        counts[r.provenance] = counts.get(r.provenance, 0) + 1
    summary = {
        "original": len(rows),
        **counts,
        "oracle_calls": int(getattr(oracle, "calls", 0)),
        "cache_hits": cached.hits if cached is not None else 0,
        "acceptance": stats.rates(),
    }
    print(json.dumps(summary))
    return 0
