"""VADD beside the plain masked diffusion model on a text the project does not ship as its
reproduce default: the project's own docs.

The corpus is the repository's README.md, docs/getting-started.md and docs/index.md, lowercased,
with every character outside ``a-z 0-9 . , ' - newline`` mapped to a space (so the held-out tail
uses no character the training text lacks); the last 10% validates. Both arms are trained with
``vadd train`` on the same windows, steps and decoder (``latent_dim=0`` is the MDLM baseline: the
same network without the latent) and scored with ``vadd evaluate`` at T = 4 and 16 sampling
steps: the valid upper bound on ``-log p_T(x)`` and the 16-sample importance-weighted estimate.
Writes ``results/own-text.json``.

    python benchmarks/own_text.py            # from packages/vadd, ~4 CPU-minutes
"""

from __future__ import annotations

import json
import math
import re
import sys
import tempfile
import time
from pathlib import Path

from vadd.cli import main

HERE = Path(__file__).resolve().parent.parent
ROOT = HERE.parent.parent
SOURCES = ("README.md", "docs/getting-started.md", "docs/index.md")
STEPS, SEQ_LEN, SAMPLES, IMPORTANCE, TS = 400, 64, 4, 16, (4, 16)


def corpus(folder: Path) -> tuple[Path, Path]:
    """Write train.txt and valid.txt (the last 10%) of the normalised docs into `folder`."""
    text = "\n".join((ROOT / s).read_text(encoding="utf-8") for s in SOURCES).lower()
    text = re.sub(r"[^a-z0-9.,'\n -]", " ", text)
    text = re.sub(r" +", " ", text)
    cut = int(0.9 * len(text))
    (folder / "train.txt").write_text(text[:cut])
    (folder / "valid.txt").write_text(text[cut:])
    return folder / "train.txt", folder / "valid.txt"


def arm(name: str, latent_dim: int, tmp: Path, train: Path, valid: Path) -> list[dict]:
    ck = tmp / f"latent{latent_dim}"
    cpu = time.process_time()
    argv = ["train", "--data", str(train), "--seq-len", str(SEQ_LEN), "--out", str(ck),
            "--set", f"steps={STEPS}", "--set", f"latent_dim={latent_dim}",
            "--runs", str(tmp / "runs")]  # fmt: skip
    assert main(argv) == 0
    train_cpu = time.process_time() - cpu
    rows = []
    for t in TS:
        scores = tmp / f"{ck.name}-{t}.json"
        argv = ["evaluate", "--checkpoint", str(ck), "--data", str(valid), "--steps", str(t),
                "--samples", str(SAMPLES), "--importance", str(IMPORTANCE), "--out", str(scores)]  # fmt: skip
        assert main(argv) == 0
        e = json.loads(scores.read_text())[str(valid)]
        rows.append({"model": name, "latent_dim": latent_dim, "T": t,
                     "valid_bound_bits_per_char": e["bits_per_char"],
                     "stderr_bits": e["nelbo_nats_stderr"] / math.log(2),
                     "iw_bits_per_char": e[f"iw{IMPORTANCE}_bits_per_char"],
                     "valid_rows": e["rows"], "train_cpu_s": train_cpu})  # fmt: skip
    return rows


if __name__ == "__main__":
    tmp = Path(tempfile.mkdtemp())
    train, valid = corpus(tmp)
    rows = arm("MDLM (latent_dim=0)", 0, tmp, train, valid) + arm("VADD", 4, tmp, train, valid)
    results = {
        "corpus": {"sources": list(SOURCES), "train_chars": len(train.read_text()),
                   "valid_chars": len(valid.read_text())},
        "settings": {"steps": STEPS, "seq_len": SEQ_LEN, "eval_samples": SAMPLES,
                     "importance_samples": IMPORTANCE, "objective": "paper (DELBO)"},
        "rows": rows,
    }  # fmt: skip
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "own-text.json").write_text(json.dumps(results, indent=2) + "\n")
    json.dump(results, sys.stdout, indent=2)
