"""MDLM on a text the project does not ship as its reproduce default: the project's own docs.

The corpus is the repository's README.md, docs/getting-started.md and docs/index.md, lowercased,
with every character outside ``a-z 0-9 . , ' - newline`` mapped to a space (so the held-out tail
uses no character the training text lacks); the last 10% validates. MDLM is trained with the
``train`` verb and scored with ``evaluate`` (validation NELBO, bits per char) beside a unigram
model of the training text. Writes ``results/own-text.json``.

    python benchmarks/own_text.py            # from packages/masked-diffusion, ~2 CPU-minutes
"""

from __future__ import annotations

import json
import math
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from masked_diffusion.cli import main

from shared_core.metrics import unigram_cross_entropy

HERE = Path(__file__).resolve().parent.parent
ROOT = HERE.parent.parent
SOURCES = ("README.md", "docs/getting-started.md", "docs/index.md")
STEPS, SEQ_LEN, SAMPLES = 600, 64, 8


def corpus(folder: Path) -> tuple[Path, Path]:
    """Write train.txt and valid.txt (the last 10%) of the normalised docs into `folder`."""
    text = "\n".join((ROOT / s).read_text(encoding="utf-8") for s in SOURCES).lower()
    text = re.sub(r"[^a-z0-9.,'\n -]", " ", text)
    text = re.sub(r" +", " ", text)
    cut = int(0.9 * len(text))
    (folder / "train.txt").write_text(text[:cut])
    (folder / "valid.txt").write_text(text[cut:])
    return folder / "train.txt", folder / "valid.txt"


def run() -> dict:
    tmp = Path(tempfile.mkdtemp())
    train, valid = corpus(tmp)
    ck, scores = tmp / "mdlm", tmp / "mdlm.json"
    cpu = time.process_time()
    argv = ["train", "--data", str(train), "--seq-len", str(SEQ_LEN), "--out", str(ck),
            "--set", f"steps={STEPS}", "--runs", str(tmp / "runs")]  # fmt: skip
    assert main(argv) == 0
    train_cpu = time.process_time() - cpu
    argv = ["evaluate", "--checkpoint", str(ck), "--data", str(valid), "--samples", str(SAMPLES),
            "--out", str(scores)]  # fmt: skip
    assert main(argv) == 0
    entry = json.loads(scores.read_text())[str(valid)]
    alphabet = json.loads((ck / "config.json").read_text())["data"]["alphabet"]
    lut = {c: i for i, c in enumerate(alphabet)}
    ids = lambda p: np.array([lut[c] for c in p.read_text()])  # noqa: E731
    unigram = unigram_cross_entropy(ids(train), ids(valid), len(alphabet))
    return {
        "corpus": {"sources": list(SOURCES), "train_chars": len(train.read_text()),
                   "valid_chars": len(valid.read_text()), "vocabulary": len(alphabet)},
        "settings": {"steps": STEPS, "seq_len": SEQ_LEN, "eval_samples": SAMPLES,
                     "model": "d_model 64, 4 heads, 2 layers (train defaults)"},
        "rows": [
            {"model": "MDLM", "valid_bits_per_char": entry["bits_per_char"],
             "stderr_bits": entry["nelbo_nats_stderr"] / math.log(2),
             "valid_rows": entry["rows"], "train_cpu_s": train_cpu},
            {"model": "unigram (add-one)", "valid_bits_per_char": unigram},
        ],
    }  # fmt: skip


if __name__ == "__main__":
    results = run()
    out = HERE / "results" / "own-text.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    json.dump(results, sys.stdout, indent=2)
