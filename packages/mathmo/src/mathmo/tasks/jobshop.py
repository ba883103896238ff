"""Job-shop scheduling: makespan vs runtime on a random ``jobs x machines`` instance.

Frameworks: OR-Tools CP-SAT (interval variables, no-overlap per machine, one worker, a time
limit), Giffler-Thompson active schedules with a dispatch rule (SPT, LPT, MWKR, LWKR, MOPNR,
FIFO), random active schedules (best of ``samples``), and a biased random-key genetic algorithm
(keys sorted into an operation sequence, decoded semi-actively).

Objectives: quality ``1 - gap`` against the lower bound ``max(max machine load, max job
length)`` (0 at twice the bound), and speed as in the TSP task.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mathmo.tasks.base import Candidate, Framework, Task, gap_quality, log_speed

RULES = ("SPT", "LPT", "MWKR", "LWKR", "MOPNR", "FIFO")


def semi_active_makespan(machines: np.ndarray, durations: np.ndarray, sequence: np.ndarray) -> int:
    """Schedule operations in ``sequence`` (job ids, each job ``M`` times) as early as possible."""
    n_jobs, n_mach = machines.shape
    nxt = np.zeros(n_jobs, dtype=np.int64)
    job_ready = np.zeros(n_jobs, dtype=np.int64)
    mach_ready = np.zeros(n_mach, dtype=np.int64)
    for j in sequence:
        k = nxt[j]
        m = machines[j, k]
        end = max(job_ready[j], mach_ready[m]) + durations[j, k]
        job_ready[j] = mach_ready[m] = end
        nxt[j] = k + 1
    return int(job_ready.max())


def giffler_thompson(
    machines: np.ndarray, durations: np.ndarray, rule: str, rng: np.random.Generator | None = None
) -> int:
    """Active schedule: take the machine of the earliest possible completion, choose among the
    operations that could start before it by ``rule`` (``"RANDOM"`` draws uniformly)."""
    n_jobs, n_mach = machines.shape
    nxt = np.zeros(n_jobs, dtype=np.int64)
    job_ready = np.zeros(n_jobs, dtype=np.int64)
    mach_ready = np.zeros(n_mach, dtype=np.int64)
    remaining = durations.sum(axis=1).astype(np.int64)
    for _ in range(n_jobs * n_mach):
        jobs = np.flatnonzero(nxt < n_mach)
        ops = nxt[jobs]
        ms = machines[jobs, ops]
        starts = np.maximum(job_ready[jobs], mach_ready[ms])
        ends = starts + durations[jobs, ops]
        star = int(np.argmin(ends))
        conflict = np.flatnonzero((ms == ms[star]) & (starts < ends[star]))
        if rule == "RANDOM":
            assert rng is not None
            pick = conflict[int(rng.integers(len(conflict)))]
        else:
            key = {
                "SPT": durations[jobs, ops],
                "LPT": -durations[jobs, ops],
                "MWKR": -remaining[jobs],
                "LWKR": remaining[jobs],
                "MOPNR": -(n_mach - ops),
                "FIFO": starts,
            }[rule]
            pick = conflict[int(np.argmin(key[conflict]))]
        j, k = jobs[pick], ops[pick]
        m = machines[j, k]
        end = max(job_ready[j], mach_ready[m]) + durations[j, k]
        job_ready[j] = mach_ready[m] = end
        remaining[j] -= durations[j, k]
        nxt[j] = k + 1
    return int(job_ready.max())


def random_key_ga(
    machines: np.ndarray, durations: np.ndarray, population: int, generations: int, seed: int
) -> int:
    """Biased random-key GA: 20 % elite, 10 % fresh mutants, offspring take each key from the
    elite parent with probability 0.7; a chromosome's sorted keys give the operation order."""
    rng = np.random.default_rng(seed)
    n_jobs, n_mach = machines.shape
    reps = np.repeat(np.arange(n_jobs), n_mach)
    keys = rng.random((population, n_jobs * n_mach))

    def fitness(k: np.ndarray) -> int:
        return semi_active_makespan(machines, durations, reps[np.argsort(k)])

    fit = np.array([fitness(k) for k in keys])
    n_elite, n_mut = max(1, population // 5), max(1, population // 10)
    for _ in range(generations):
        order = np.argsort(fit, kind="stable")
        keys, fit = keys[order], fit[order]
        n_child = population - n_elite - n_mut
        if n_child <= 0:
            break
        elite_parents = keys[rng.integers(0, n_elite, n_child)]
        other_parents = keys[rng.integers(n_elite, population, n_child)]
        children = np.where(rng.random(elite_parents.shape) < 0.7, elite_parents, other_parents)
        mutants = rng.random((n_mut, keys.shape[1]))
        new = np.vstack([children, mutants])
        keys = np.vstack([keys[:n_elite], new])
        fit = np.concatenate([fit[:n_elite], [fitness(k) for k in new]])
    return int(fit.min())


def cp_sat(machines: np.ndarray, durations: np.ndarray, time_limit_s: float, seed: int) -> int:
    from ortools.sat.python import cp_model

    n_jobs, n_mach = machines.shape
    horizon = int(durations.sum())
    model = cp_model.CpModel()
    ends: list[Any] = []
    per_machine: list[list[Any]] = [[] for _ in range(n_mach)]
    for j in range(n_jobs):
        prev = None
        for k in range(n_mach):
            s = model.new_int_var(0, horizon, f"s{j}_{k}")
            e = model.new_int_var(0, horizon, f"e{j}_{k}")
            per_machine[machines[j, k]].append(
                model.new_interval_var(s, int(durations[j, k]), e, f"i{j}_{k}")
            )
            if prev is not None:
                model.add(s >= prev)
            prev = e
        ends.append(prev)
    for ivs in per_machine:
        model.add_no_overlap(ivs)
    makespan = model.new_int_var(0, horizon, "makespan")
    model.add_max_equality(makespan, ends)
    model.minimize(makespan)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit_s
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise RuntimeError(f"CP-SAT found no schedule within {time_limit_s} s")
    return int(solver.value(makespan))


class JobShopTask(Task):
    """A random instance: each job visits every machine once in a random order, durations 1-9."""

    objectives = ("quality", "speed")

    def __init__(
        self, jobs: int = 8, machines: int = 6, seed: int = 0, ortools: bool = True
    ) -> None:
        if not isinstance(jobs, int) or not isinstance(machines, int) or jobs < 2 or machines < 2:
            raise ValueError(f"jobs, machines: expected ints >= 2, got {jobs!r}, {machines!r}")
        self.name = f"jobshop-{jobs}x{machines}"
        rng = np.random.default_rng(seed)
        self.machines = np.stack([rng.permutation(machines) for _ in range(jobs)])
        self.durations = rng.integers(1, 10, size=(jobs, machines))
        load = np.zeros(machines, dtype=np.int64)
        np.add.at(load, self.machines.ravel(), self.durations.ravel())
        self.lower_bound = int(max(load.max(), self.durations.sum(axis=1).max()))
        fws = [
            Framework(
                "dispatch_rule",
                "Giffler-Thompson active schedule with a priority rule",
                {"rule": RULES},
            ),
            Framework(
                "random_schedules",
                "best of random active schedules",
                {"samples": (1, 10, 100, 300), "seed": (0, 1)},
            ),
            Framework(
                "random_key_ga",
                "biased random-key genetic algorithm",
                {"population": (10, 20, 40), "generations": (5, 20, 60), "seed": (0, 1)},
            ),
        ]
        if ortools:
            # imported here, not inside the timed solve: a sandboxed child inherits the module
            from ortools.sat.python import cp_model  # noqa: F401

            fws.insert(
                0,
                Framework(
                    "cp_sat",
                    "OR-Tools CP-SAT constraint programming",
                    {"time_limit_s": (0.01, 0.05, 0.2, 1.0), "seed": (0, 1)},
                ),
            )
        self.frameworks = tuple(fws)

    def describe(self) -> str:
        j, m = self.machines.shape
        return f"Job-shop scheduling, {j} jobs x {m} machines; objectives: makespan (minimise) and solver CPU time (minimise)."

    def solve(self, candidate: Candidate) -> int:
        f, mach, dur = candidate.framework, self.machines, self.durations
        if f == "cp_sat":
            return cp_sat(mach, dur, candidate.get("time_limit_s"), candidate.get("seed"))
        if f == "dispatch_rule":
            return giffler_thompson(mach, dur, candidate.get("rule"))
        if f == "random_schedules":
            rng = np.random.default_rng(candidate.get("seed"))
            return min(
                giffler_thompson(mach, dur, "RANDOM", rng) for _ in range(candidate.get("samples"))
            )
        if f == "random_key_ga":
            return random_key_ga(
                mach,
                dur,
                candidate.get("population"),
                candidate.get("generations"),
                candidate.get("seed"),
            )
        raise ValueError(f"candidate: unknown job-shop framework {f!r}")

    def evaluate(self, candidate: Candidate) -> dict[str, float]:
        start = time.process_time()
        makespan = self.solve(candidate)
        return {"makespan": float(makespan), "cpu_s": time.process_time() - start}

    def normalise(self, raw: dict[str, float], subjective: float | None = None) -> np.ndarray:
        return np.array(
            [gap_quality(raw["makespan"], self.lower_bound, 1.0), log_speed(raw["cpu_s"])]
        )
