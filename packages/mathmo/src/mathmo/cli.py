"""The ``mathmo`` console script: ``mathmo reproduce [--scale micro|tiny|small|paper]`` and
``mathmo solve --data task.py --out DIR`` (a user's task file, `mathmo.verbs`)."""

from __future__ import annotations

from mathmo.costs import cost_help
from mathmo.verbs import solve_options
from shared_core.cli import lazy_reproduce_command, make_main
from shared_core.verbs import Slots, verb_command

main = make_main(
    "mathmo",
    [
        lazy_reproduce_command(
            "mathmo.experiments.ablation",
            help="MATHMO vs RAN / FLAT / NAIVE with the programmatic operators on TSP, job-shop, "
            f"ecology and epidemiology (relative hypervolume, paired CIs, front plots; {cost_help()}).",
        ),
        verb_command(
            "solve",
            "mathmo.verbs:solve",
            help="search models for the task a Python file defines (objectives, frameworks, "
            "evaluate, normalise; see mathmo.tasks.from_file); writes the Pareto front (CSV, "
            "PNG) and the best models' code into --out (a folder); --set rounds=N etc. "
            "override the SearchConfig",
            slots=Slots(data="required", checkpoint="none", out="required"),
            config="mathmo.search:SearchConfig",
            options=solve_options,
        ),
    ],
    description="MATHMO (ICLR 2026): automated mathematical modelling by bi-level adaptive search.",
)

if __name__ == "__main__":
    raise SystemExit(main())
