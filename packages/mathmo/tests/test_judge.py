import pytest
from mathmo.tasks.base import ModelCard


@pytest.mark.slow
def test_smollm_judge_is_antisymmetric_probability() -> None:
    pytest.importorskip("transformers")
    from shared_core.models import model_path

    try:
        model_path("smollm2-135m-instruct")
    except (ModuleNotFoundError, FileNotFoundError):
        pytest.skip("the llm extra (SmolLM2 wheel) is not installed")
    from mathmo.judge import SmolLMJudge

    judge = SmolLMJudge()
    a, b = ModelCard("SIR model", 3, True), ModelCard("AR(10) on log cases", 11, False)
    p = judge(a, b)
    assert 0.0 <= p <= 1.0
    assert judge(b, a) == pytest.approx(1.0 - p, abs=1e-12)
