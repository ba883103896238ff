import pytest
import torch
from crome import reference
from crome import world as W
from crome.model import RewardModel


def _texts(n=9):
    w = W.make_world(W.WorldConfig(n_train=n, n_test=1, seed=2))
    return [r.prompt for r in w.train], [r.chosen for r in w.train]


def test_batched_scores_match_one_by_one(tiny_rm):
    prompts, answers = _texts()
    batched = tiny_rm.score(prompts, answers, batch_size=4)
    single = reference.score_one_by_one(tiny_rm, prompts, answers)
    assert batched.shape == (len(prompts),) and batched.dtype == torch.float32
    assert torch.allclose(batched, torch.tensor(single), atol=1e-5)
    assert batched.std() > 0  # the random head gives different rewards


def test_prompt_is_part_of_the_input(tiny_rm):
    a = W.Answer(5).render()
    r = tiny_rm.score(["What is 2 + 3?", "What is 9 + 9?"], [a, a])
    assert abs(float(r[0] - r[1])) > 1e-6


def test_save_load_roundtrip_gives_identical_rewards(tiny_rm, tmp_path):
    prompts, answers = _texts()
    before = tiny_rm.score(prompts, answers)
    tiny_rm.save_pretrained(tmp_path / "rm")
    assert (tmp_path / "rm" / "model.safetensors").is_file()
    loaded = RewardModel.from_pretrained(tmp_path / "rm")
    assert torch.equal(loaded.score(prompts, answers), before)
    assert loaded.max_length == tiny_rm.max_length


def test_fresh_head_starts_at_zero_reward(tiny_rm):
    fresh = RewardModel(tiny_rm.backbone, tiny_rm.tokenizer)
    prompts, answers = _texts(4)
    assert torch.equal(fresh.score(prompts, answers), torch.zeros(4))


def test_freeze(tiny_rm):
    tiny_rm.freeze(1)
    layers = tiny_rm.backbone.encoder.layer
    assert not any(p.requires_grad for p in tiny_rm.backbone.embeddings.parameters())
    assert not any(p.requires_grad for p in layers[0].parameters())
    assert all(p.requires_grad for p in layers[1].parameters())
    assert all(p.requires_grad for p in tiny_rm.head.parameters())
    tiny_rm.freeze(-1)
    assert all(p.requires_grad for p in tiny_rm.parameters())
    with pytest.raises(ValueError, match="trainable_layers"):
        tiny_rm.freeze(5)


def test_bad_input_raises_clearly(tiny_rm, tmp_path):
    with pytest.raises(ValueError, match=r"answers\[1\]"):
        tiny_rm.score(["q", "q"], ["fine", ""])
    with pytest.raises(ValueError, match="answers"):
        tiny_rm.score(["q", "q"], ["fine"])
    with pytest.raises(TypeError, match="prompts"):
        tiny_rm.score("q", ["a"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"answers\[0\]"):
        tiny_rm.score(["q"], [None])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="second"):
        tiny_rm.margins(["q"], ["a"], ["b", "c"])
    with pytest.raises(ValueError, match="batch_size"):
        tiny_rm.score(["q"], ["a"], batch_size=0)
    with pytest.raises(FileNotFoundError, match="save_pretrained"):
        RewardModel.from_pretrained(tmp_path)
    with pytest.raises(FileNotFoundError, match="config.json"):
        RewardModel.from_backbone(tmp_path)
    with pytest.raises(ValueError, match="max_length"):
        RewardModel(tiny_rm.backbone, tiny_rm.tokenizer, max_length=2)


def test_saved_folder_has_provenance_and_refuses_other_folders(tiny_rm, tmp_path):
    import json

    data = tmp_path / "prefs.jsonl"
    data.write_text('{"prompt": "q", "chosen": "a", "rejected": "b"}\n')
    out = tiny_rm.save_pretrained(
        tmp_path / "rm", metrics={"acc": 0.5}, command="crome train --data prefs.jsonl", data=[data]
    )
    assert (out / "backbone" / "config.json").is_file()
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["package"] == "crome" and prov["class"] == "crome.model.RewardModel"
    card = (out / "README.md").read_text()
    assert "crome train --data prefs.jsonl" in card and prov["data"][0]["sha256"] in card
    prov["package"] = "msgen"
    (out / "provenance.json").write_text(json.dumps(prov))
    with pytest.raises(
        ValueError, match=r"rm: written by package 'msgen'.*expected a crome RewardModel"
    ):
        RewardModel.from_pretrained(out)
