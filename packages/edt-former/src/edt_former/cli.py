"""The ``edt-former`` console script: ``edt-former reproduce [--scale micro|tiny|small|paper]``.

Thin on purpose: torch, RDKit and transformers are imported only when a command runs, so
``edt-former --help`` answers at once.
"""

from __future__ import annotations

from shared_core.cli import lazy_reproduce_command, make_main

REPRODUCE_HELP = (
    "Molecular yes/no QA through a frozen LLM: static Q-Former queries vs EDT-Former's "
    "entropy/BRICS queries at equal token budget, plus SMILES-in-prompt and shuffled-label "
    "controls: micro (~10 s) is a smoke run, tiny (random frozen Llama, 3 seeds) a few "
    "minutes of CPU, small uses SmolLM2-135M (extra 'llm'), paper is GPU-sized."
)

main = make_main(
    "edt-former",
    [lazy_reproduce_command("edt_former.experiments.qa", REPRODUCE_HELP)],
    description="EDT-Former: entropy-guided dynamic tokens between a molecular graph encoder and a frozen LLM (ICLR 2026).",
)

if __name__ == "__main__":
    raise SystemExit(main())
