import pytest

from shared_core.progress import Heartbeat, _eta, phase, plan


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def beat(clock, lines):
    return Heartbeat("run", interval=30, clock=clock, write=lines.append)


def test_plan_lists_the_phases_and_the_estimate_then_numbers_each_phase():
    clock, lines = Clock(), []
    with beat(clock, lines):
        plan(["load", "train", "evaluate"], estimate_s=120)
        phase("load")
        clock.t = 40
        phase("train")
    assert lines[0] == "[run] phases: load -> train -> evaluate; estimated ~2 min 00 s"
    assert lines[1] == "[run] 0 min 00 s elapsed; phase 1/3: load; ETA ~2 min 00 s"
    assert lines[2] == "[run] 0 min 40 s elapsed; phase 2/3: train; ETA ~1 min 20 s"


def test_eta_falls_back_on_the_pace_over_the_estimate_and_without_one():
    clock, lines = Clock(), []
    with beat(clock, lines):
        plan(["a", "b", "c", "d"])
        phase("a")
        assert _eta(10) is None  # nothing finished, no estimate
        phase("c")  # two phases done in 60 s: 30 s each, two left
        assert _eta(60) == pytest.approx(60)
        plan(["a", "b", "c", "d"], estimate_s=50)
        phase("c")
        assert _eta(20) == pytest.approx(30)  # within the estimate
        assert _eta(60) == pytest.approx(60)  # over it: the pace


def test_a_phase_outside_the_plan_labels_the_line_without_an_index():
    clock, lines = Clock(), []
    with beat(clock, lines):
        plan(["train"])
        phase("epoch 3")
    assert lines[-1] == "[run] 0 min 00 s elapsed; phase: epoch 3"


def test_heartbeat_ticks_every_interval_with_its_eta():
    clock, lines = Clock(), []
    with beat(clock, lines) as hb:
        plan(["one", "two"], estimate_s=100)
        phase("one", announce=False)
        clock.t = 29
        assert hb.tick() is None
        clock.t = 30
        assert hb.tick() == "[run] 0 min 30 s elapsed; phase 1/2: one; ETA ~1 min 10 s"


@pytest.mark.parametrize(
    "phases, estimate, match",
    [([], None, "phases"), (["a", " "], None, "phases"), (["a"], 0, "estimate_s")],
)
def test_bad_plans_are_refused(phases, estimate, match):
    with pytest.raises(ValueError, match=match):
        plan(phases, estimate)
