"""shared-core's own rule, checked (run by `nox -s lint`): it holds what two or more packages need.

A public name of ``shared_core`` passes when two or more packages import it, or when another
shared-core module uses it (it is part of the machinery those imports rely on), or when it
is in KEPT below with the reason. Anything else is printed: make it private, move it into
the one package that uses it, or delete it.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "shared-core" / "src" / "shared_core"

KEPT = {
    # the text-LM verbs' library API (issue 64): for a user's own scripts beside the CLI
    "shared_core.textlm.CharTokenizer": "the tokenizer a train folder carries; load it beside from_pretrained",
    "shared_core.textlm.TextTrainConfig": "the train.* settings, for train_text_lm callers",
    "shared_core.textlm.train_text_lm": "the train verb as a function",
    "shared_core.textlm.sample_text_lm": "the sample verb as a function",
    "shared_core.causal_lm.next_token_loss": "causal_lm_output's loss, for a forward that builds its own output",
    # the contract every package's tests, benchmarks and CLI follow (all packages adopt them)
    "shared_core.testing.relative_rms_error": "assert_close's number, for tests that report it",
    "shared_core.bench.Ratio": "the return type of paired_ratio",
    "shared_core.train.FitResult": "the return type of fit",
    "shared_core.train.BatchFn": "type of fit's batch_fn, for package signatures",
    "shared_core.train.LossFn": "type of fit's loss_fn, for package signatures",
    "shared_core.train.Callback": "type of fit's callback",
    "shared_core.train.SCHEDULES": "the allowed TrainConfig.schedule values",
    "shared_core.train.AMP_DTYPES": "the allowed TrainConfig.amp_dtype values",
    "shared_core.cli.Main": "the return type of make_main",
    "shared_core.cli.SCALES": "the scale names a package's SCALES may use",
    "shared_core.cli.DEFAULT_SCALE": "the scale reproduce runs without --scale",
    "shared_core.cli.USER_ERRORS": "which exceptions the CLI reports in one line",
    "shared_core.progress.Heartbeat": "the line every command prints; a package's other long commands use it too",
    "shared_core.progress.phase": "names a command's current phase in its heartbeat line (any package)",
    "shared_core.progress.plan": "announces a command's phases and estimated cost (any package)",
    # the verbs every package offers on a user's own data (issue 61; the package issues adopt them)
    "shared_core.verbs.Slot": "the type of Slots' fields",
    "shared_core.verbs.Slots": "which of --data/--checkpoint/--out a package's own verb takes",
    "shared_core.verbs.VerbArgs": "what every verb's function receives",
    "shared_core.verbs.verb_command": "a package's own verb (audit, fit, augment, ...)",
    "shared_core.verbs.train_command": "the train verb of every package that trains",
    "shared_core.verbs.sample_command": "the sample/generate verb of every generator",
    "shared_core.verbs.predict_command": "the predict/score verb",
    "shared_core.verbs.evaluate_command": "the evaluate verb",
    "shared_core.verbs.record_checkpoint": "links a train run's report to its checkpoint folder",
    # fine-tuning a causal LM on a user's records: the four LLM packages' train verbs (issue 63)
    "shared_core.finetune.SFT_FORMATS": "the JSONL formats the LLM packages fine-tune on",
    "shared_core.finetune.load_causal_lm": "--model: a local folder or smollm2",
    "shared_core.finetune.encode_records": "TRL records as input_ids/labels",
    "shared_core.finetune.lora_arg": "the --lora r,alpha type",
    "shared_core.finetune.add_finetune_flags": "the same fine-tuning flags in the four packages",
    "shared_core.finetune.add_schedule_flags": "those flags' optimisation part, for crome's train on fit (add_finetune_flags uses it)",
    "shared_core.finetune.training_arguments": "those flags as TrainingArguments",
    "shared_core.finetune.apply_lora": "--lora through peft",
    "shared_core.finetune.save_finetuned": "the output folder the Auto classes load",
    "shared_core.finetune.read_encoded": "--data/--eval read and encoded (context-denoising next)",
    "shared_core.finetune.EncodedFile": "what the LLM train verbs hand to TrainingRun.fit",
    "shared_core.device.THREAD_ENV_VARS": "what limit_threads sets, for child processes",
    "shared_core.device.DEVICE_ENV": "the variable the nox cuda sessions set",
    # data and metrics the next packages (issues 16-28) are written against
    "shared_core.data.registry.DatasetInfo": "a package registers its own offline data set",
    "shared_core.data.registry.register": "a package registers its own offline data set",
    "shared_core.data.registry.datasets": "lists what loads offline (docs, CLI)",
    "shared_core.data.registry.dataset_info": "a data set's source and licence for reports",
    "shared_core.metrics.perplexity": "generative perplexity: context-denoising, nextquill",
    "shared_core.metrics.nll": "log-likelihood summaries: dist2loss, context-denoising",
    "shared_core.metrics.rmse": "regression error: paretovae, explainable-mixtures",
    "shared_core.metrics.ArrayLike": "the input type of every metric",
    "shared_core.metrics.accuracy": "classification: topoformer, explainable-mixtures",
    "shared_core.metrics.roc_auc": "classification: topoformer (MoleculeNet), orient-bias",
    "shared_core.metrics.mae": "regression: orient-bias, dist2loss-style numeric answers, msgen",
    "shared_core.metrics.r2_score": "regression: orient-bias, explainable-mixtures",
    "shared_core.metrics.unigram_cross_entropy": "sample statistics of text generators (vadd text)",
    "shared_core.metrics.frechet_distance": "Frechet distances: pgm-diffusion, dist2loss VQ, toprovar",
    "shared_core.metrics.psnr": "ssim's companion for image restoration (paretovae; any image package)",
    "shared_core.testing.shadowed_exports": ".ci/check_exports.py runs it for every package "
    "(assert_exports_not_shadowed runs it in a fresh interpreter)",
    "shared_core.models.ModelInfo": "issue 13 registry, for edt-former, nextquill, mathmo, crome",
    "shared_core.models.models": "issue 13 registry: lists the offline models",
    "shared_core.models.model_info": "issue 13 registry: an entry's licence and extra",
    "shared_core.models.model_path": "issue 13 registry: the weights' path (gguf loaders)",
    "shared_core.models.load_model": "issue 13 registry: context-denoising, nextquill, edt-former",
    "shared_core.models.load_tokenizer": "issue 13 registry: dist2loss, nextquill",
    "shared_core.models.word_tokenizer": "tiny_lm's tokenizer half: nextquill builds its model "
    "apart (crome and edt-former get it through tiny_lm)",
    "shared_core.mol_metrics.canonical_smiles": "issue 13: msgen, meld-diffusion, edt-former",
    "shared_core.mol_metrics.validity": "issue 13: meld-diffusion, msgen",
    "shared_core.mol_metrics.uniqueness": "issue 13: meld-diffusion, msgen",
    "shared_core.mol_metrics.novelty": "issue 13: meld-diffusion, msgen",
    "shared_core.mol_metrics.conformer_rmsd": "issue 13: msgen conformers",
    "shared_core.mol_metrics.coverage_matching": "issue 13: msgen COV/MAT",
    "shared_core.bench.CLOCKS": "the clocks BenchTable accepts",
    "shared_core.bench.Measurement": "the return type of measure",
    "shared_core.bench.paired_ratio": "one ratio from two measurements",
    "shared_core.cli.device_arg": "argparse type for a package's extra --device-like options",
    "shared_core.cli.positive_int": "argparse type for a package's extra count options",
    "shared_core.cli.nonneg_int": "argparse type of --seed; quality-scaling's --bootstrap",
    "shared_core.distributed.is_main": "rank-0 guard for a package's own printing (crome)",
    "shared_core.distributed.shutdown": "ends a torchrun worker's process group",
    "shared_core.report.markdown_table": "a package's own tables in README-style output",
    "shared_core.train.lr_factor": "the schedule fit applies, for plots and tests",
    "shared_core.train.shard": "fit's rank split, for packages that evaluate under torchrun",
    "shared_core.train.to_device": "fit's batch mover, for a package's evaluation loops",
    # issue 61 checkpoints: the one save/load path every package's `train` verb adopts
    "shared_core.hub.Pretrained": "issue 61: the torch model mixin every package's train verb uses",
    "shared_core.hub.save_flax": "issue 61: Flax/jax models' checkpoint folder",
    "shared_core.hub.load_flax": "issue 61: Flax/jax models' checkpoint folder",
    "shared_core.hub.file_sha256": "issue 61: data hashes in provenance and run records",
    "shared_core.hub.config_to_json": "issue 61: config dataclass -> JSON (--config files)",
    "shared_core.hub.config_from_json": "issue 61: JSON -> config dataclass (--config files)",
    "shared_core.hub.CONFIG": "issue 61: the folder's file names, for packages and the CLI",
    "shared_core.hub.PROVENANCE": "issue 61: the folder's file names, for packages and the CLI",
    "shared_core.hub.WEIGHTS": "issue 61: the folder's file names (crome; packages' own savers)",
    "shared_core.hub.save_folder": "issue 61: a checkpoint around a package's own writer (crome)",
    "shared_core.hub.load_folder": "issue 61: a checkpoint around a package's own reader (crome)",
}


def _public_definitions() -> dict[str, Path]:
    found = {}
    for f in SRC.rglob("*.py"):
        if f.name in ("__init__.py", "pytest_plugin.py"):
            continue
        mod = ".".join(("shared_core", *f.relative_to(SRC).with_suffix("").parts))
        for node in ast.parse(f.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            else:
                names = []
            found.update({f"{mod}.{n}": f for n in names if not n.startswith("_") and n != "T"})
    return found


def _imports(files: list[Path]) -> set[tuple[str, str]]:
    """(module, name) pairs imported from shared_core in `files`."""
    out = set()
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("shared_core"):
                out |= {(node.module or "", a.name) for a in node.names}
    return out


def _resolves(qualified: str, module: str, name: str) -> bool:
    mod, _, defined = qualified.rpartition(".")
    return defined == name and (mod == module or mod.startswith(module + "."))


def main() -> int:
    defs = _public_definitions()
    users: dict[str, set[str]] = defaultdict(set)
    for pkg in sorted((ROOT / "packages").glob("*/")):
        for module, name in _imports(sorted(pkg.rglob("*.py"))):
            for q in defs:
                if _resolves(q, module, name):
                    users[q].add(pkg.name)
    internal = set()
    for f in SRC.rglob("*.py"):
        for module, name in _imports([f]):
            internal |= {q for q, src in defs.items() if src != f and _resolves(q, module, name)}
    stale = sorted(k for k in KEPT if k not in defs)
    # the registry's loaders are reached through shared_core.data.load(name), not imported
    internal |= {q for q in defs if q.startswith("shared_core.data.sources.load_")}
    lonely = sorted(q for q in defs if len(users[q]) < 2 and q not in internal and q not in KEPT)
    for q in lonely:
        print(
            f"shared-core: {q} is imported by {sorted(users[q]) or 'no package'}", file=sys.stderr
        )
    for q in stale:
        print(f"shared-core: KEPT names {q}, which no longer exists", file=sys.stderr)
    return 1 if lonely or stale else 0


if __name__ == "__main__":
    sys.exit(main())
