"""The ``edt-former`` console script: ``reproduce`` the paper's comparison, or ``train`` /
``ask`` / ``evaluate`` on a user's (SMILES, question, answer) JSONL file (`edt_former.verbs`).

Thin on purpose: torch, RDKit and transformers are imported only when a command runs, so
``edt-former --help`` answers at once.
"""

from __future__ import annotations

from edt_former.costs import cost_help
from edt_former.verbs import answer_options, ask_options, train_options
from shared_core.cli import lazy_reproduce_command, make_main
from shared_core.verbs import Slots, evaluate_command, train_command, verb_command

VERBS = "edt_former.verbs"

REPRODUCE_HELP = (
    "Molecular yes/no QA through a frozen LLM: static Q-Former queries vs EDT-Former's "
    "entropy/BRICS queries at equal token budget, plus SMILES-in-prompt and shuffled-label "
    f"controls: {cost_help()}."
)

main = make_main(
    "edt-former",
    [
        lazy_reproduce_command("edt_former.experiments.qa", REPRODUCE_HELP),
        train_command(
            f"{VERBS}:train",
            "train the connector (entropy/BRICS + static queries, Q-Former) on a JSONL file of "
            "smiles/question/answer records, the LLM frozen (--llm DIR, default SmolLM2)",
            config=f"{VERBS}:TrainSettings",
            options=train_options,
        ),
        verb_command(
            "ask",
            f"{VERBS}:ask",
            'answer a question about a molecule (--smiles CCO "question"), or every record '
            "of --data into --out",
            Slots(data="optional", checkpoint="required", out="optional"),
            options=ask_options,
        ),
        evaluate_command(
            f"{VERBS}:evaluate",
            "exact match of the greedy answers on a JSONL file with answers",
            options=answer_options,
            many=False,
        ),
    ],
    description="EDT-Former: entropy-guided dynamic tokens between a molecular graph encoder and a frozen LLM (ICLR 2026).",
)

if __name__ == "__main__":
    raise SystemExit(main())
