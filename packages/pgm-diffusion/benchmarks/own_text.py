"""PGM beside MDLM on a text the project does not ship as its reproduce default: its own docs.

The corpus is the repository's README.md, docs/getting-started.md and docs/index.md, lowercased,
with every character outside ``a-z 0-9 . , ' - newline`` mapped to a space (so the held-out tail
uses no character the training text lacks); the last 10% validates. Both models are trained with
their packages' ``train`` verbs on the same windows, steps, width and depth (MDLM 2 layers, PGM
1 encoder + 1 decoder block) and scored with ``evaluate`` (the same NELBO estimator, same seed);
``sample`` times each package's default sampler at equal steps. Writes ``results/own-text.json``.

    python benchmarks/own_text.py            # from packages/pgm-diffusion, ~3 CPU-minutes
"""

from __future__ import annotations

import json
import math
import re
import sys
import tempfile
import time
from pathlib import Path

from masked_diffusion.cli import main as mdlm_main
from pgm.cli import main as pgm_main

HERE = Path(__file__).resolve().parent.parent
ROOT = HERE.parent.parent
SOURCES = ("README.md", "docs/getting-started.md", "docs/index.md")
STEPS, SEQ_LEN, SAMPLES, SAMPLE_STEPS, N = 600, 64, 8, 64, 64


def corpus(folder: Path) -> tuple[Path, Path]:
    """Write train.txt and valid.txt (the last 10%) of the normalised docs into `folder`."""
    text = "\n".join((ROOT / s).read_text(encoding="utf-8") for s in SOURCES).lower()
    text = re.sub(r"[^a-z0-9.,'\n -]", " ", text)
    text = re.sub(r" +", " ", text)
    cut = int(0.9 * len(text))
    (folder / "train.txt").write_text(text[:cut])
    (folder / "valid.txt").write_text(text[cut:])
    return folder / "train.txt", folder / "valid.txt"


def arm(name: str, main, tmp: Path, train: Path, valid: Path) -> dict:
    ck, scores = tmp / name, tmp / f"{name}.json"
    cpu = time.process_time()
    argv = ["train", "--data", str(train), "--seq-len", str(SEQ_LEN), "--out", str(ck),
            "--set", f"steps={STEPS}", "--runs", str(tmp / "runs")]  # fmt: skip
    assert main(argv) == 0
    train_cpu = time.process_time() - cpu
    argv = ["evaluate", "--checkpoint", str(ck), "--data", str(valid), "--samples", str(SAMPLES),
            "--out", str(scores)]  # fmt: skip
    assert main(argv) == 0
    entry = json.loads(scores.read_text())[str(valid)]
    cpu = time.process_time()
    argv = ["sample", "--checkpoint", str(ck), "-n", str(N), "--steps", str(SAMPLE_STEPS),
            "--out", str(tmp / f"{name}.txt")]  # fmt: skip
    assert main(argv) == 0
    sample_cpu = time.process_time() - cpu
    params = json.loads((ck / "config.json").read_text())
    return {"model": name, "valid_bits_per_char": entry["bits_per_char"],
            "stderr_bits": entry["nelbo_nats_stderr"] / math.log(2), "valid_rows": entry["rows"],
            "train_cpu_s": train_cpu, "sample_cpu_s": sample_cpu, "config": params}  # fmt: skip


if __name__ == "__main__":
    tmp = Path(tempfile.mkdtemp())
    train, valid = corpus(tmp)
    rows = [arm("MDLM", mdlm_main, tmp, train, valid), arm("PGM", pgm_main, tmp, train, valid)]
    results = {
        "corpus": {"sources": list(SOURCES), "train_chars": len(train.read_text()),
                   "valid_chars": len(valid.read_text())},
        "settings": {"steps": STEPS, "seq_len": SEQ_LEN, "eval_samples": SAMPLES,
                     "sample_steps": SAMPLE_STEPS, "n_samples": N,
                     "samplers": {"MDLM": "ancestral", "PGM": "partition"}},
        "rows": rows,
    }  # fmt: skip
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "own-text.json").write_text(json.dumps(results, indent=2) + "\n")
    json.dump(results, sys.stdout, indent=2)
