import pytest
from crome.data import PairRow
from crome.experiments.ablation import ARMS, arm_data
from crome.experiments.config import SCALES, ExperimentConfig
from crome.experiments.controlled_world import budget
from crome.train import TrainConfig


def test_budget_sizes_both_rms_by_epochs_over_the_crome_data():
    cfg = ExperimentConfig(train=TrainConfig(steps=36, batch_size=16))
    assert budget(cfg, 800) == cfg.train  # no epochs: the configured steps
    cfg = ExperimentConfig(train=TrainConfig(steps=36, batch_size=16), epochs=2.5)
    assert budget(cfg, 800).steps == 125 and budget(cfg, 1).steps == 1
    assert budget(cfg, 800).lr_head == cfg.train.lr_head


@pytest.mark.parametrize("epochs", [0.0, -1.0, float("inf"), float("nan")])
def test_experiment_config_rejects_bad_epochs(epochs):
    with pytest.raises(ValueError, match="epochs: expected a finite number > 0 or None"):
        ExperimentConfig(epochs=epochs)


def test_ablation_arms_change_one_thing():
    train = [PairRow("q", "a", "b")] * 4
    kept = [PairRow("q", "a", "c"), PairRow("q", "a", "d", label="tie")]
    cfg = SCALES["tiny"].train
    sizes = {a: len(arm_data(a, train, kept, cfg)[0]) for a in ARMS}
    assert sizes["crome"] == 6 and sizes["crome_causal_only"] == 5
    assert sizes["causal_aug_only"] == 1 and sizes["standard_4x_steps"] == 4
    assert arm_data("crome_4x_steps", train, kept, cfg)[1].steps == 4 * cfg.steps
    assert arm_data("crome_lam0.25", train, kept, cfg)[1].lam == 0.25
    with pytest.raises(ValueError, match="arms: unknown arm 'bogus'"):
        arm_data("bogus", train, kept, cfg)


def test_ablation_evaluate_reports_the_reproduce_best_of_n(tiny_rm):
    from crome import world as W
    from crome.experiments.ablation import evaluate
    from crome.experiments.controlled_world import best_of_n_trap

    w = W.make_world(W.WorldConfig(n_facts=10, n_train=4, n_test=8))
    m = evaluate(tiny_rm, w, n_best_of=4, seed=3)
    assert m["bon_gold"] == best_of_n_trap(tiny_rm, w, 4, 3)["rm"]
    assert 0.0 <= m["bon_gold"] <= 1.0 and 0.0 <= m["causal_acc"] <= 1.0


@pytest.mark.parametrize("seed", [-1, 1.5, True])
def test_run_ablation_rejects_a_bad_seed(seed):
    from crome.experiments.ablation import run_ablation

    with pytest.raises(ValueError, match="seed: expected an int >= 0 or None"):
        run_ablation(["crome"], SCALES["micro"], seed=seed)


def test_run_ablation_uses_the_given_seed(tmp_path):
    import json

    from crome.experiments.ablation import run_ablation

    out = tmp_path / "abl.json"
    res = run_ablation(["crome"], SCALES["micro"], out=out, seed=2)
    assert res["crome"]["seed"] == 2 and res["crome"]["steps"] == SCALES["micro"].train.steps
    assert "bon_gold" in res["standard"] and json.loads(out.read_text())["crome"]["seed"] == 2


def test_t_interval_and_its_errors():
    from crome.experiments.ablation import t_interval

    mean, lo, hi = t_interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and abs((hi - mean) - 4.303 / 3**0.5) < 1e-9 and lo == 4.0 - hi
    assert t_interval([0.5, 0.5]) == (0.5, 0.5, 0.5)
    with pytest.raises(ValueError, match="values: expected at least 2"):
        t_interval([1.0])


def test_summarize_pools_seeds_and_pairs_the_4x_arms():
    from crome.experiments.ablation import METRICS, format_summary, summarize

    def m(seed, v, **kw):
        return {**dict.fromkeys(METRICS, v), "seed": seed, "steps": 144, **kw}

    runs = []
    for s in range(3):
        std = m(s, 0.1 * s)
        runs.append({"standard": std, "crome_4x_steps": m(s, 0.5 + 0.1 * s)})
        runs.append({"standard": std, "standard_4x_steps": m(s, 0.2 * s, iid_acc=1.0)})
    out = summarize(runs)
    assert out["standard"]["seeds"] == [0, 1, 2]  # shared by both runs of a seed: once
    assert out["crome_4x_steps"]["cf_acc"][0] == pytest.approx(0.6)
    bars = out["bars"]
    assert bars["seeds"] == [0, 1, 2]
    assert bars["cf_acc above standard"][0] == pytest.approx(0.4)
    assert bars["causal_acc >= standard iid_acc"][0] == pytest.approx(-0.4)
    text = format_summary(out)
    assert "| crome_4x_steps | 144 | 0,1,2 |" in text and "bon_gold above standard" in text
    with pytest.raises(ValueError, match="runs: expected one seed per run"):
        summarize([{"a": m(0, 0.0), "b": m(1, 0.0)}])


def test_summarize_out_writes_the_summary_json(tmp_path, capsys):
    """``--summarize ... --out FILE`` prints the tables and writes the summary (with the pooled
    files' names) as JSON, atomically: no temporary file is left beside it."""
    import json

    from crome.experiments.ablation import METRICS, main, summarize

    files = []
    for s in range(2):
        run = {
            "standard": {**dict.fromkeys(METRICS, 0.1 * s), "seed": s, "steps": 36},
            "crome_4x_steps": {**dict.fromkeys(METRICS, 0.5 + s), "seed": s, "steps": 144},
            "standard_4x_steps": {**dict.fromkeys(METRICS, 0.2), "seed": s, "steps": 144},
        }
        files.append(tmp_path / f"s{s}.json")
        files[-1].write_text(json.dumps(run))
    out = tmp_path / "summary.json"
    main(["--summarize", *map(str, files), "--out", str(out)])
    assert "| crome_4x_steps | 144 | 0,1 |" in capsys.readouterr().out
    written = json.loads(out.read_text())
    assert written["files"] == [str(f) for f in files]
    expected = summarize([json.loads(f.read_text()) for f in files])
    assert written["summary"] == json.loads(json.dumps(expected))
    assert written["summary"]["bars"]["cf_acc above standard"][0] == pytest.approx(0.8)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s0.json", "s1.json", "summary.json"]


def test_tie_kinds_arms_select_by_provenance():
    from crome.experiments.tie_kinds import ARMS, PREMISE, TARGETED, arm_rows

    train = [PairRow("q", "a", "b")] * 2
    kept = [
        PairRow("q", "a", "c", provenance="causal-degrade"),
        PairRow("q", "d", "b", provenance="causal-upgrade"),
        PairRow("r", "a", "b", label="tie", provenance="neutral-iqn"),
        PairRow("q", "a", "e", label="tie", provenance="neutral-causal-aligned"),
        PairRow("q", "a", "f", label="tie", provenance=TARGETED),
    ]
    sizes = {a: len(arm_rows(a, train, kept)) for a in ARMS}
    assert sizes == {
        "standard": 2,
        "causal_only": 4,
        "causal_iqn": 5,
        "causal_iqn_generic": 6,
        "causal_iqn_targeted": 6,
    }
    assert arm_rows("causal_iqn_targeted", train, kept)[-1].provenance == TARGETED
    assert "causal_iqn_targeted" not in PREMISE
    with pytest.raises(ValueError, match="arms: unknown arm 'bogus'"):
        arm_rows("bogus", train, kept)


def test_tie_kinds_default_arm_is_the_reproduce(tmp_path):
    """The ablation's standard and causal_iqn_generic arms ARE `crome reproduce`'s two RMs at
    the same scale and seed (so the README's headline and ablation rows agree)."""
    import json

    from crome.cli import main
    from crome.experiments.tie_kinds import format_kinds, run_kinds, summarize_kinds

    res = run_kinds(["standard", "causal_iqn_generic"], SCALES["micro"], seed=1)
    assert main(["reproduce", "--scale", "micro", "--seed", "1", "--out", str(tmp_path)]) == 0
    (run_dir,) = (tmp_path / "crome").iterdir()
    rep = json.loads((run_dir / "metrics.json").read_text())["metrics"]
    for arm, name in (("standard", "standard RM"), ("causal_iqn_generic", "CROME RM")):
        for k in ("iid_acc", "cf_acc", "causal_acc", "spurious_sens", "causal_sens", "bon_gold"):
            assert res[arm][k] == pytest.approx(rep["results"][name][k], rel=1e-5, abs=1e-6), k
    kept = res["augmentations"]["kept"]
    assert {p: kept[p] for p in rep["kept_by_provenance"]} == rep["kept_by_provenance"]
    assert res["causal_iqn_generic"]["rows"] == 32 + rep["kept_after_filter"]
    changes = res["augmentations"]["decoration_changes"]["neutral-oracle-knows-spurious"]
    assert changes.get("any", 1.0) == 1.0  # the targeted arm always re-draws decoration
    other = {**res, "standard": {**res["standard"], "seed": 2}}
    other["causal_iqn_generic"] = {**res["causal_iqn_generic"], "seed": 2}
    summary = summarize_kinds([res, other])
    diff = summary["paired"]["causal_iqn_generic - standard"]["cf_acc"]
    assert diff[0] == pytest.approx(res["causal_iqn_generic"]["cf_acc"] - res["standard"]["cf_acc"])
    text = format_kinds(summary)
    assert "| causal_iqn_generic - standard |" in text
    assert "| causal_iqn_generic | yes |" in text and "causal_iqn_targeted" not in text
