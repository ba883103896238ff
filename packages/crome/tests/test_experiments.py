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
