"""The verbs on a user's molecules: ``train`` (conformer ensembles in an SDF -> checkpoint),
``generate`` (SMILES -> a multi-conformer SDF, all atoms with hydrogens) and ``evaluate``
(generated against reference conformers: COV-R/MAT-R and COV-P/MAT-P with RDKit's
``GetBestRMS`` after ``RemoveHs``, as the package's QM9 evaluation).

SDF files are read and written through `shared_core.data.read_sdf` / `write_sdf`; SMILES files
through `read_smiles`. Conformers of one molecule are grouped by their title (``--group-by
name``, default) or by canonical SMILES (``--group-by smiles``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from msgen.epsnet import EpsNetConfig
from shared_core.cli import UsageError
from shared_core.progress import phase, plan
from shared_core.verbs import VerbArgs


@dataclass(frozen=True)
class TrainSettings:
    """``msgen train`` settings (``--config`` / ``--set``); defaults: the tiny scale's sizes."""

    network: str = "geodiff"
    epsnet: EpsNetConfig = field(
        default_factory=lambda: EpsNetConfig(hidden=32, num_convs=3, num_convs_local=3)
    )
    sampler: str = "ld"
    ld_steps: int = 250
    diffusion_steps: int = 100
    batch_size: int = 16
    stage1_steps: int = 400
    stage2_steps: int = 400
    lr: float = 1e-3
    tau: float = 3.0
    guide_augmentation: bool = True
    scales: tuple[str, ...] = ("heavy",)


def _mol_error(e: ValueError) -> UsageError:
    return UsageError(str(e))


def _load(folder: Path) -> Any:
    from msgen.pretrained import MSGENModel

    try:
        return MSGENModel.from_pretrained(folder)
    except ValueError as e:
        raise _mol_error(e) from None


def _read_sdf(path: Path, group_by: str, skip_invalid: bool) -> Any:
    from shared_core.data import read_sdf

    try:
        return read_sdf(path, group_by=group_by, skip_invalid=skip_invalid)
    except ValueError as e:
        raise _mol_error(e) from None


def _name(mol: Any, k: int) -> str:
    return mol.GetProp("_Name").strip() if mol.HasProp("_Name") else f"molecule {k}"


def conformer_graphs(
    path: Path, mols: list[Any], skip_invalid: bool
) -> tuple[list[Any], list[dict[str, Any]]]:
    """One `MolGraph` with positions per conformer of each molecule (all atoms, hydrogens
    explicit), and the molecules skipped (``skip_invalid``) with why."""
    from rdkit import Chem

    from msgen.data import check_molecule
    from shared_core.data import mol_graph

    graphs, skipped = [], []
    for k, mol in enumerate(mols, start=1):
        name = _name(mol, k)
        try:
            implicit = sum(a.GetNumImplicitHs() for a in mol.GetAtoms())
            if implicit:
                raise ValueError(
                    f"has {implicit} implicit hydrogens; expected every atom with coordinates "
                    "(write it with Chem.AddHs(mol, addCoords=True))"
                )
            for conf in mol.GetConformers():
                pos = conf.GetPositions()
                if not conf.Is3D() or not np.any(pos[:, 2]) or not np.any(pos):
                    raise ValueError(
                        f"conformer {conf.GetId()} has no 3-D coordinates (all z = 0); expected "
                        "a 3-D conformer"
                    )
                g = mol_graph(Chem.Mol(mol, confId=conf.GetId()))
                graphs.append(check_molecule(g, "molecule", conformer=True))
        except ValueError as e:
            reason = f"{path}, molecule {name!r}: {e}"
            if not skip_invalid:
                raise UsageError(reason + " (or pass --skip-invalid to skip it)") from None
            skipped.append({"molecule": name, "reason": reason})
    if not graphs:
        raise UsageError(f"--data: no usable conformer in {path}")
    return graphs, skipped


def train(args: VerbArgs) -> Path:
    """``msgen train --data ensembles.sdf --out DIR``: every stage on the user's conformers."""
    import torch

    from msgen.experiments.conformers import ConformerConfig, _generator
    from msgen.multiscale import MSGEN
    from msgen.pretrained import MSGENConfig, MSGENModel
    from shared_core.report import Run
    from shared_core.verbs import record_checkpoint

    s: TrainSettings = args.config
    assert args.out is not None
    plan(["reading conformers", "training", "saving"])
    phase("reading conformers")
    read = _read_sdf(args.data_path, args.extra.get("group_by", "name"), args.skip_invalid)
    graphs, skipped = conformer_graphs(args.data_path, read.records, args.skip_invalid)
    try:
        cc = ConformerConfig(
            network=s.network, epsnet=s.epsnet, sampler=s.sampler, ld_steps=s.ld_steps,
            other_samplers=(), diffusion_steps=s.diffusion_steps, batch_size=s.batch_size,
            stage1_steps=s.stage1_steps, stage2_steps=s.stage2_steps, lr=s.lr, tau=s.tau,
            guide_augmentation=s.guide_augmentation, scales=s.scales,
        )  # fmt: skip
    except ValueError as e:
        raise UsageError(str(e)) from None
    steps = [cc.stage1_steps] + [cc.stage2_steps] * len(s.scales)
    torch.manual_seed(args.seed)
    gens = [_generator(cc, n, guided=i > 0) for i, n in enumerate(steps)]
    mols = len(read.records) - len(skipped)
    print(f"{len(graphs)} conformers of {mols} molecules ({read.n_skipped + len(skipped)} skipped)")
    with Run("msgen", s, out=args.runs) as run:
        c0 = time.process_time()
        model = MSGEN(gens, s.scales, s.tau)
        phase(f"training {len(gens)} stages ({' + '.join(map(str, steps))} steps)")
        results = model.fit(graphs, seed=args.seed)
        phase("saving")
        config = MSGENConfig(stages=tuple(g.config for g in gens), scales=s.scales, tau=s.tau)
        out = MSGENModel(config)
        for net, g in zip(out.nets, gens, strict=True):
            net.load_state_dict(g.net.state_dict())
        metrics = {
            "conformers": len(graphs),
            "molecules": mols,
            "skipped": read.n_skipped + len(skipped),
            "train_cpu_s": round(time.process_time() - c0, 1),
        }
        for i, r in enumerate(results, start=1):
            metrics[f"stage{i}_final_loss"] = round(float(np.mean(r.losses[-20:])), 4)
        out.save_pretrained(args.out, metrics=metrics, data=[args.data_path])
        run.log(**metrics, skipped_records=read.metrics()["skipped_records"] + skipped)
        record_checkpoint(run, args.out)
        run.finish("msgen train", print_tables=False)
    print(f"trained {len(gens)} stages; checkpoint: {args.out}")
    return args.out


def _molecules(args: VerbArgs) -> list[tuple[str, str]]:
    """(SMILES, name) of each molecule to generate: ``--smiles`` or the ``--data`` file."""
    from shared_core.data import read_smiles

    given = args.extra.get("smiles")
    if given and args.data:
        raise UsageError("--smiles and --data: give one of them")
    if given:
        return [(s, s) for s in given]
    if not args.data:
        raise UsageError("--data or --smiles: expected the molecules to generate conformers for")
    try:
        read = read_smiles(
            args.data_path, smiles_column=args.extra.get("smiles_column") or "smiles",
            skip_invalid=args.skip_invalid,
        )  # fmt: skip
    except ValueError as e:
        raise UsageError(str(e)) from None
    if read.n_skipped:
        print(f"skipped {read.n_skipped} invalid SMILES of {args.data_path}")
    return [(r.smiles, r.name or r.smiles) for r in read.records]


def generate(args: VerbArgs) -> Path:
    """``msgen generate --checkpoint DIR --data mols.smi --num-confs 10 --out confs.sdf``."""
    from rdkit import Chem

    from msgen.data import check_molecule, molecule
    from shared_core.data import write_sdf

    k = args.extra.get("num_confs", 10)
    if not isinstance(k, int) or k < 1:
        raise UsageError(f"--num-confs: expected a positive int, got {k}")
    assert args.checkpoint is not None and args.out is not None
    if args.out.suffix.lower() != ".sdf":
        raise UsageError(f"--out: expected a .sdf file, got {args.out}")
    plan(["loading", "generating", "writing"])
    phase("loading")
    molecules = _molecules(args)
    graphs = []
    for smiles, name in molecules:
        try:
            graphs.append(check_molecule(molecule(smiles), f"molecule {name!r}"))
        except ValueError as e:
            raise UsageError(f"--smiles/--data: {e}") from None
    model = _load(args.checkpoint).msgen
    phase(f"generating {k} conformers for {len(graphs)} molecules")
    positions = model.sample(graphs, k, seed=args.seed)
    phase("writing")
    mols, diverged = [], 0
    for (smiles, name), pos in zip(molecules, positions, strict=True):
        mol = Chem.AddHs(Chem.MolFromSmiles(smiles))  # molecule()'s atom order
        mol.SetProp("_Name", name)
        for x in pos:
            if not np.all(np.isfinite(x)):
                diverged += 1
                continue
            conf = Chem.Conformer(mol.GetNumAtoms())
            for a, xyz in enumerate(x.tolist()):
                conf.SetAtomPosition(a, xyz)
            conf.Set3D(True)
            mol.AddConformer(conf, assignId=True)
        if mol.GetNumConformers():
            mols.append(mol)
    if not mols:
        raise UsageError("generate: every conformer diverged (NaN); nothing to write")
    write_sdf(args.out, mols)
    written = sum(m.GetNumConformers() for m in mols)
    print(
        f"wrote {written} conformers of {len(mols)} molecule{'s' * (len(mols) != 1)} to "
        f"{args.out}" + (f" ({diverged} diverged conformers left out)" if diverged else "")
    )
    return args.out


def _by_smiles(mols: list[Any]) -> dict[str, Any]:
    from rdkit import Chem

    out: dict[str, Any] = {}
    for m in mols:
        key = Chem.MolToSmiles(Chem.RemoveHs(m), isomericSmiles=False)
        if key in out:
            for conf in m.GetConformers():
                out[key].AddConformer(Chem.Conformer(conf), assignId=True)
        else:
            out[key] = Chem.Mol(m)
    return out


def _confs(mol: Any) -> list[Any]:
    from rdkit import Chem

    return [Chem.Mol(mol, confId=c.GetId()) for c in mol.GetConformers()]


def evaluate(args: VerbArgs) -> dict[str, Any]:
    """``msgen evaluate --data confs.sdf --data ref.sdf [--out metrics.json]``."""
    from shared_core.atomic import atomic_write_json
    from shared_core.mol_metrics import conformer_rmsd, coverage_matching

    if len(args.data) != 2:
        raise UsageError(
            "--data: evaluate expects two SDF files, the generated then the reference "
            f"conformers, got {len(args.data)}"
        )
    delta = args.extra.get("delta", 0.5)
    plan(["reading", "RMSD (GetBestRMS)"])
    phase("reading")
    gen = _by_smiles(_read_sdf(args.data[0], "smiles", args.skip_invalid).records)
    ref = _by_smiles(_read_sdf(args.data[1], "smiles", args.skip_invalid).records)
    common = [key for key in ref if key in gen]
    if not common:
        raise UsageError(
            f"--data: no molecule of {args.data[0]} is in {args.data[1]} (matched by "
            "canonical SMILES)"
        )
    phase(f"RMSD (GetBestRMS) for {len(common)} molecules")
    per = []
    for key in common:
        try:
            rmsd = conformer_rmsd(_confs(ref[key]), _confs(gen[key]))
        except ValueError as e:
            raise UsageError(f"{key}: {e}") from None
        per.append(coverage_matching(rmsd, delta))
    m: dict[str, Any] = {
        f"COV-R@{delta:g}": float(np.mean([p["COV-R"] for p in per])),
        "MAT-R": float(np.mean([p["MAT-R"] for p in per])),
        f"COV-P@{delta:g}": float(np.mean([p["COV-P"] for p in per])),
        "MAT-P": float(np.mean([p["MAT-P"] for p in per])),
        "molecules": len(common),
        "reference_only": len(ref) - len(common),
        "generated_only": len(gen) - len(common),
    }
    for key, v in m.items():
        print(f"{key:>15}: {v:.4f}" if isinstance(v, float) else f"{key:>15}: {v}")
    if args.out is not None:
        atomic_write_json(args.out, m)
    return m
