"""The verbs on a user's molecules: ``train`` (SMILES file -> checkpoint folder), ``sample``
(checkpoint -> canonical SMILES, invalid graphs as empty lines) and ``evaluate`` (samples
against a reference file: the paper's metrics).

``train`` reads the SMILES (``.smi`` or CSV/TSV with a SMILES column) through
`shared_core.data.read_smiles`, kekulises each molecule and takes the atom vocabulary (element
and formal charge, among the paper's ZINC250k elements C, N, O, F, P, S, Cl, Br, I) and
``max_atoms`` from the file. A molecule the model cannot represent (another element, more heavy
atoms than ``--max-atoms``, hydrogens other than the default valences `decode` restores, such
as a radical) is one error naming the molecule, or is skipped and counted with
``--skip-invalid``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from meld_diffusion.cli import ARM_CHOICES
from meld_diffusion.model import GraphTransformerConfig
from meld_diffusion.rates import MELDConfig
from shared_core.cli import UsageError
from shared_core.progress import phase, plan
from shared_core.verbs import VerbArgs


@dataclass(frozen=True)
class TrainSettings:
    """``meld-diffusion train`` settings (``--config`` / ``--set``); defaults: tiny's sizes.

    arm: "meld" (the paper's schedule network), "vanilla" (power law) or "class" (GenMD4).
    max_atoms: the largest molecule the model takes (0: the file's largest).
    """

    arm: str = "meld"
    max_atoms: int = 0
    steps: int = 1000
    batch: int = 64
    lr: float = 1e-3
    warmup: int = 30
    denoiser: GraphTransformerConfig = field(default_factory=GraphTransformerConfig)
    meld: MELDConfig = field(default_factory=MELDConfig)
    tau: float = 1.0
    gradient: str = "st"
    sampling_eps: float = 1e-3
    sample_steps: int = 50
    smiles_column: str = "smiles"


def _read(path: Path, column: str, skip_invalid: bool) -> Any:
    from shared_core.data import read_smiles

    try:
        return read_smiles(path, smiles_column=column, skip_invalid=skip_invalid)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _load(folder: Path) -> Any:
    from meld_diffusion.generator import MELDGenerator

    try:
        return MELDGenerator.from_pretrained(folder)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _graphs(
    path: Path, records: list[Any], max_atoms: int, atom_types: tuple[str, ...] | None, skip: bool
) -> tuple[list[Any], list[dict[str, Any]]]:
    """The representable molecules' kekulised graphs, and the skipped ones (by line)."""
    from meld_diffusion.data import ELEMENTS, atom_label, decode, encode
    from shared_core import mol_metrics as mm
    from shared_core.data import mol_graph

    graphs: list[Any] = []
    skipped: list[dict[str, Any]] = []
    for k, rec in enumerate(records, start=1):
        g = mol_graph(rec.smiles, kekulize=True)
        try:
            zs = g.atoms[:, 0].tolist()
            bad = sorted({z for z in zs if z not in ELEMENTS.values()})
            if bad:
                raise ValueError(
                    f"element(s) Z={bad} not supported; expected only {', '.join(ELEMENTS)}"
                )
            if max_atoms and g.num_atoms > max_atoms:
                raise ValueError(f"{g.num_atoms} heavy atoms > --max-atoms {max_atoms}")
            labels = [atom_label(z, q) for z, q in g.atoms[:, :2].tolist()]
            if atom_types is not None and not set(labels) <= set(atom_types):
                raise ValueError(
                    f"atom type(s) {sorted(set(labels) - set(atom_types))} are not in the "
                    f"checkpoint's vocabulary {atom_types}"
                )
            types = atom_types or tuple(dict.fromkeys(labels))
            back = decode(*encode([g], g.num_atoms, types), g.num_atoms, types)
            if mm.canonical_smiles(back) != mm.canonical_smiles([rec.smiles]):
                raise ValueError(
                    "its hydrogen counts are not the default valences' (a radical or an "
                    "unusual valence), which the graph rows cannot hold"
                )
        except ValueError as e:
            reason = f"{path}, line {rec.line} (molecule {k}, {rec.smiles!r}): {e}"
            if not skip:
                raise UsageError(
                    reason + " (or pass --skip-invalid to skip such molecules)"
                ) from None
            skipped.append({"line": rec.line, "reason": reason})
            continue
        graphs.append(g)
    if not graphs:
        raise UsageError(f"--data: none of the {len(records)} molecules of {path} can be used")
    return graphs, skipped


def vocabulary(graphs: list[Any]) -> tuple[str, ...]:
    """The atom types of `graphs`: neutral elements first (in `ELEMENTS` order), then ions."""
    from meld_diffusion.data import ELEMENTS, atom_label

    seen = {(z, q) for g in graphs for z, q in g.atoms[:, :2].tolist()}
    order = list(ELEMENTS.values())
    return tuple(
        atom_label(z, q)
        for z, q in sorted(seen, key=lambda a: (a[1] != 0, order.index(a[0]), a[1]))
    )


def train(args: VerbArgs) -> Path:
    """``meld-diffusion train --data mols.smi --out DIR``: fit one arm, save the folder."""
    import numpy as np
    import torch
    from masked_diffusion import row_batches

    from meld_diffusion.data import encode
    from meld_diffusion.generator import MELDGenerator, generator_config
    from meld_diffusion.meld import graph_loss_fn, with_counts
    from shared_core.device import resolve_device
    from shared_core.report import Run
    from shared_core.train import TrainConfig, fit
    from shared_core.verbs import record_checkpoint

    s: TrainSettings = args.config
    extra = args.extra
    s = replace(
        s,
        arm=extra.get("arm") or s.arm,
        max_atoms=s.max_atoms if extra.get("max_atoms") is None else extra["max_atoms"],
        smiles_column=extra.get("smiles_column") or s.smiles_column,
    )
    if s.arm not in ARM_CHOICES:
        raise UsageError(f"arm: expected one of {ARM_CHOICES}, got {s.arm!r}")
    if s.max_atoms < 0:
        raise UsageError(f"--max-atoms: expected a positive int, got {s.max_atoms}")
    assert args.out is not None
    start = args.checkpoint or (args.out if args.resume and args.out.is_dir() else None)
    plan(["reading molecules", "training", "saving"], estimate_s=None)
    phase("reading molecules")
    read = _read(args.data_path, s.smiles_column, args.skip_invalid)
    base = _load(start) if start is not None else None
    types = base.config.atom_types if base is not None else None
    limit = base.config.max_atoms if base is not None else s.max_atoms
    graphs, skipped = _graphs(args.data_path, read.records, limit, types, args.skip_invalid)
    n_atoms = max(g.num_atoms for g in graphs)
    if base is not None:
        model = base
    else:
        types = vocabulary(graphs)
        cfg = generator_config(
            s.arm, types, np.asarray([g.num_atoms for g in graphs]),
            max_atoms=s.max_atoms or n_atoms, denoiser=s.denoiser, meld=s.meld,
            sample_steps=s.sample_steps,
        )  # fmt: skip
        torch.manual_seed(args.seed)
        model = MELDGenerator(cfg)
    cfg = model.config
    rows, counts = encode(graphs, cfg.max_atoms, cfg.atom_types)
    print(
        f"{len(graphs)} molecules ({read.n_skipped + len(skipped)} skipped), atom types "
        f"{', '.join(cfg.atom_types)}, max_atoms {cfg.max_atoms}, arm {cfg.arm}"
    )
    device = str(resolve_device(args.device))
    with Run("meld-diffusion", s, out=args.runs) as run:
        phase(f"training ({s.steps} steps)")
        c0 = time.process_time()
        data = with_counts(torch.as_tensor(rows), torch.as_tensor(counts))
        loss_fn = graph_loss_fn(
            model.schedule(), cfg.max_atoms, tau=s.tau, gradient=s.gradient,
            sampling_eps=s.sampling_eps,
        )  # fmt: skip
        tc = TrainConfig(steps=s.steps, lr=s.lr, warmup=s.warmup, weight_decay=0.0)
        result = fit(
            model.mdm, loss_fn, row_batches(data, s.batch, args.seed), tc,
            desc=f"{cfg.arm} train", device=device, show_progress=False,
        )  # fmt: skip
        model.cpu()
        final = float(np.mean(result.losses[-20:]))
        metrics = {
            "molecules": len(graphs),
            "skipped": read.n_skipped + len(skipped),
            "final_loss": round(final, 4),
            "train_cpu_s": round(time.process_time() - c0, 1),
        }
        phase("saving")
        model.save_pretrained(args.out, metrics=metrics, data=[args.data_path])
        run.log(**metrics, skipped_records=read.metrics()["skipped_records"] + skipped)
        steps = list(range(1, len(result.losses) + 1))
        run.plot("training_loss", {"NELBO per element (nats)": (steps, result.losses)},
                 xlabel="training step", ylabel="loss")  # fmt: skip
        record_checkpoint(run, args.out)
        run.finish(f"meld-diffusion train ({cfg.arm})", print_tables=False)
    print(f"final loss {final:.4f} nats/element; checkpoint: {args.out}")
    return args.out


def sample(args: VerbArgs) -> Path:
    """``meld-diffusion sample --checkpoint DIR -n 1000 --out samples.smi``."""
    from shared_core.atomic import atomic_write_text

    n = args.extra.get("n", 1000)
    if not isinstance(n, int) or n < 1:
        raise UsageError(f"-n: expected a positive number of samples, got {n}")
    assert args.checkpoint is not None and args.out is not None
    plan(["loading", "sampling", "writing"])
    phase("loading")
    model = _load(args.checkpoint)
    phase(f"sampling {n} graphs ({model.config.sample_steps} steps)")
    smiles = model.sample_smiles(n, seed=args.seed)
    phase("writing")
    atomic_write_text(args.out, "".join(f"{s or ''}\n" for s in smiles))
    invalid = sum(s is None for s in smiles)
    print(
        f"wrote {n} samples to {args.out}: {n - invalid} valid, {invalid} invalid graphs "
        "(empty lines)"
    )
    return args.out


def _samples(path: Path) -> list[str | None]:
    """The sample file `sample` writes: one SMILES a line, an empty line per invalid graph
    (so a file of empty lines is all-invalid samples; a file of no lines is an error)."""
    if not path.is_file():
        raise FileNotFoundError(f"--data: no such file {path}")
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise UsageError(f"--data: {path} is empty; expected samples, one SMILES a line")
    return [line.split()[0] if line.strip() else None for line in lines]


def evaluate(args: VerbArgs) -> dict[str, Any]:
    """``meld-diffusion evaluate --data samples.smi --data train.smi [--out metrics.json]``."""
    from meld_diffusion.evaluate import fcd_available, smiles_metrics
    from shared_core.atomic import atomic_write_json

    if len(args.data) != 2:
        raise UsageError(
            f"--data: evaluate expects two files, the samples then the reference (training) "
            f"molecules, got {len(args.data)}"
        )
    plan(["reading", "metrics"])
    phase("reading")
    samples = _samples(args.data[0])
    ref = _read(args.data[1], "smiles", args.skip_invalid)
    reference = [r.smiles for r in ref.records]
    phase("metrics (validity, uniqueness, novelty, FCD, NSPDK, scaffolds)")
    m = smiles_metrics(samples, train_smiles=reference, reference_smiles=reference)
    m["reference"] = len(reference)
    if "fcd" not in m:
        m["fcd"] = None
    for k, v in m.items():
        if v is not None:
            print(f"{k:>12}: {v:.4f}" if isinstance(v, float) else f"{k:>12}: {v}")
    if m["fcd"] is None:
        why = (
            "fewer than 2 valid samples" if fcd_available() else "pip install 'meld-diffusion[fcd]'"
        )
        print(f"         fcd: not computed ({why})")
    m = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in m.items()}
    if args.out is not None:
        atomic_write_json(args.out, m)  # NaN (no valid sample to compare) as null
    return m
