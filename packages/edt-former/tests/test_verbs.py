"""``edt-former train`` / ``ask`` / ``evaluate`` on JSONL files, through the console script's `main`.

The LLM is a tiny random Llama saved as a model folder (`shared_core.models.tiny_lm`), so
every verb runs in seconds; the default SmolLM2 path is the README's, run as pasted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("rdkit")
from edt_former.cli import main

from shared_core.testing import assert_usage_error

DATA = Path(__file__).parent / "data"
QUESTION = "how many rings does this molecule have"
WORDS = [
    "question", "molecule", "answer", ":", "?", "how", "many", "rings", "does", "this",
    "have", "nitrogen", "atoms", "is", "aromatic", "yes", "no", *"0123456789",
]  # fmt: skip
FAST = ["--set", "steps=6", "--set", "entropy_steps=3", "--set", "gin_steps=3",
        "--set", "batch_size=4", "--set", "n_static=2", "--set", "local_budget=2",
        "--set", "qformer_hidden=16", "--set", "qformer_layers=1", "--set", "warmup=1",
        "--set", "lr=0.01"]  # fmt: skip


@pytest.fixture(scope="module")
def llm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama whose tokenizer reads the questions' words and each digit, as a folder."""
    from shared_core.models import tiny_lm

    model, tok = tiny_lm(
        WORDS, specials={"pad": "<pad>", "bos": "<s>", "eos": "</s>", "unk": "<unk>"},
        split=r"[a-z]+|\S", hidden_size=16, num_layers=1, num_heads=2, seed=0,
    )  # fmt: skip
    folder = tmp_path_factory.mktemp("llm") / "tiny-llama"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _train(out: Path, llm: Path, *argv: str, data: Path = DATA / "qa.jsonl") -> int:
    return main(["train", "--data", str(data), "--llm", str(llm), "--out", str(out),
                 "--runs", str(out.parent / "runs"), *FAST, *argv])  # fmt: skip


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, llm_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("train") / "ck"
    assert _train(out, llm_dir) == 0
    return out


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    return assert_usage_error(main, argv, capsys, "edt-former")


def test_train_writes_a_folder_that_loads_and_answers_the_same(trained: Path) -> None:
    from edt_former.qa_model import EDTFormerQA

    names = {p.name for p in trained.iterdir()}
    assert {"config.json", "model.safetensors", "entropy_model.safetensors", "provenance.json",
            "README.md", "train_state.pt"} <= names  # fmt: skip
    config = json.loads((trained / "config.json").read_text())
    assert Path(config["llm"]).name == "tiny-llama" and len(config["llm_fingerprint"]) == 16
    provenance = json.loads((trained / "provenance.json").read_text())
    assert provenance["package"] == "edt-former" and provenance["metrics"]["steps"] == 6
    assert provenance["metrics"]["records"] == 52
    assert provenance["data"][0]["path"].endswith("qa.jsonl")
    smiles = ["CCO", "c1ccccc1", "CC(=O)Nc1ccc(O)cc1"]
    questions = [QUESTION, "is this molecule aromatic", QUESTION]
    a = EDTFormerQA.from_pretrained(trained)
    b = EDTFormerQA.from_pretrained(trained)
    first = a.answer(smiles, questions, max_new_tokens=3)
    assert first == b.answer(smiles, questions, max_new_tokens=3)
    assert len(first) == 3 and all(isinstance(x, str) for x in first)
    # the loaded connector is the trained one, bit for bit (same loss on the same batch)
    enc = a.encode(smiles)
    rows, n = a.token_rows(questions, ["0", "yes", "1"])
    batch = a.batch(enc, [0, 1, 2], rows, n)
    assert a.loss(batch).item() == b.loss(batch).item()


def test_training_moves_only_the_connector(trained: Path, llm_dir: Path) -> None:
    import torch
    from edt_former.qa_model import EDTFormerQA
    from safetensors.torch import load_file

    qa = EDTFormerQA.from_pretrained(trained)
    frozen = load_file(llm_dir / "model.safetensors")
    for name, w in qa.llm.state_dict().items():
        if name in frozen:
            assert torch.equal(w, frozen[name]), name
    table = qa.llm.get_input_embeddings().weight
    mean = table.mean(0)
    # the <mol> rows trained away from their mean initialisation
    assert not torch.allclose(qa.bridge.new_rows, mean.expand_as(qa.bridge.new_rows))


def test_same_seed_same_checkpoint(tmp_path: Path, trained: Path, llm_dir: Path) -> None:
    from safetensors.torch import load_file

    assert _train(tmp_path / "again", llm_dir) == 0
    one, two = (
        load_file(trained / "model.safetensors"),
        load_file(tmp_path / "again" / "model.safetensors"),
    )
    assert one.keys() == two.keys() and all((one[k] == two[k]).all() for k in one)


def test_resume_after_an_interruption_ends_at_the_same_weights(
    tmp_path: Path, trained: Path, llm_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from safetensors.torch import load_file

    import shared_core.train

    real_fit = shared_core.train.fit

    def interrupted(*args: object, **kwargs: object) -> object:
        if kwargs.get("desc") != "EDT-Former connector":  # the entropy model, the GIN
            return real_fit(*args, **kwargs)  # type: ignore[arg-type]
        real_fit(*args, **{**kwargs, "stop_at": 3})  # type: ignore[arg-type]
        raise RuntimeError("killed")

    out = tmp_path / "ck"
    monkeypatch.setattr(shared_core.train, "fit", interrupted)
    with pytest.raises(RuntimeError, match="killed"):
        _train(out, llm_dir, "--set", "checkpoint_every=1")
    assert [p.name for p in out.iterdir()] == ["train_state.pt"]  # no half-written folder
    monkeypatch.setattr(shared_core.train, "fit", real_fit)
    assert _train(out, llm_dir, "--set", "checkpoint_every=1", "--resume") == 0
    one, two = load_file(trained / "model.safetensors"), load_file(out / "model.safetensors")
    assert all(torch_equal(one[k], two[k]) for k in one)


def torch_equal(a: object, b: object) -> bool:
    import torch

    return bool(torch.equal(a, b))  # type: ignore[arg-type]


def test_ask_one_and_many(
    trained: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from edt_former.qa_model import EDTFormerQA

    expected = EDTFormerQA.from_pretrained(trained).answer(["CCO"], [QUESTION], 4)[0]
    capsys.readouterr()
    assert main(["ask", "--checkpoint", str(trained), "--smiles", "CCO", QUESTION,
                 "--max-new-tokens", "4", "--runs", str(tmp_path / "runs")]) == 0  # fmt: skip
    assert capsys.readouterr().out == expected + "\n"
    out = tmp_path / "answers.jsonl"
    assert main(["ask", "--checkpoint", str(trained), "--data", str(DATA / "questions.jsonl"),
                 "--out", str(out), "--runs", str(tmp_path / "runs")]) == 0  # fmt: skip
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["smiles"] for r in rows] == ["CCCO", "c1ccoc1", "NCCN"]
    assert all(isinstance(r["answer"], str) for r in rows)


def test_evaluate_exact_match(trained: Path, tmp_path: Path) -> None:
    from edt_former.qa_model import EDTFormerQA
    from edt_former.verbs import normalise, read_qa

    out = tmp_path / "eval.json"
    assert main(["evaluate", "--checkpoint", str(trained), "--data", str(DATA / "qa.jsonl"),
                 "--out", str(out), "--max-new-tokens", "2", "--runs", str(tmp_path / "runs")]) == 0  # fmt: skip
    result = json.loads(out.read_text())
    recs = read_qa(DATA / "qa.jsonl").records
    answers = EDTFormerQA.from_pretrained(trained).answer(
        [r["smiles"] for r in recs], [r["question"] for r in recs], 2
    )
    hits = sum(normalise(a) == normalise(r["answer"]) for a, r in zip(answers, recs, strict=True))
    assert result["records"] == 52 and result["correct"] == hits
    assert result["exact_match"] == round(hits / 52, 4)


def test_data_file_answers_are_rdkit_facts() -> None:
    from edt_former.verbs import read_qa
    from rdkit import Chem
    from rdkit.Chem import rdMolDescriptors

    for r in read_qa(DATA / "qa.jsonl").records:
        m = Chem.MolFromSmiles(r["smiles"])
        truth = {
            QUESTION: str(rdMolDescriptors.CalcNumRings(m)),
            "how many nitrogen atoms does this molecule have": str(
                sum(a.GetAtomicNum() == 7 for a in m.GetAtoms())
            ),
            "is this molecule aromatic": "yes"
            if rdMolDescriptors.CalcNumAromaticRings(m)
            else "no",
        }[r["question"]]
        assert r["answer"] == truth, r


# ---------------------------------------------------------------------------------------------
# bad input: one error line each, nothing written


GOOD = '{"smiles": "CCO", "question": "how many rings does this molecule have", "answer": "0"}\n'


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (GOOD + '{"smiles": "C1CC", "question": "q", "answer": "0"}\n', "line 2: smiles: RDKit"),
        (GOOD + '{"smiles": "CCO", "question": "q"}\n', "line 2: missing field(s) ['answer']"),
        (GOOD + "smiles,question,answer\n", "line 2: not valid JSON"),
        (GOOD + '{"smiles": "CCO", "question": "q", "answer": 3}\n', "line 2: 'answer': expected"),
        ("", "is empty"),
    ],
    ids=["invalid-smiles", "missing-answer", "not-json", "answer-not-string", "empty"],
)
def test_bad_training_file_is_one_error(
    text: str, needle: str, tmp_path: Path, llm_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(text)
    out = tmp_path / "ck"
    line = _error(capsys, ["train", "--data", str(bad), "--llm", str(llm_dir), "--out", str(out),
                           "--runs", str(tmp_path / "runs"), *FAST])  # fmt: skip
    assert needle in line and str(bad) in line
    assert not out.exists()


def test_skip_invalid_counts_the_bad_lines(tmp_path: Path, llm_dir: Path) -> None:
    bad = tmp_path / "mixed.jsonl"
    bad.write_text((DATA / "qa.jsonl").read_text() + '{"smiles": "C1CC", "question": "q", '
                   '"answer": "0"}\nnot json\n')  # fmt: skip
    out = tmp_path / "ck"
    assert _train(out, llm_dir, "--skip-invalid", data=bad) == 0
    metrics = json.loads((out / "provenance.json").read_text())["metrics"]
    assert metrics["skipped_records"] == 2 and metrics["records"] == 52


def test_another_packages_checkpoint_is_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dataclasses import dataclass

    from shared_core.hub import save_folder

    @dataclass(frozen=True)
    class Other:
        width: int = 3

    folder = save_folder(tmp_path / "other", lambda tmp, prov: None, owner=Other, config=Other(),
                         distribution="shared-core")  # fmt: skip
    line = _error(capsys, ["ask", "--checkpoint", str(folder), "--smiles", "CCO", QUESTION,
                           "--runs", str(tmp_path / "runs")])  # fmt: skip
    assert "--checkpoint" in line and "shared-core" in line and "EDTFormerQA" in line


def test_ask_needs_smiles_and_question_or_data(
    trained: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = ["--runs", str(tmp_path / "runs")]
    assert "--smiles" in _error(capsys, ["ask", "--checkpoint", str(trained), *runs])
    assert "question" in _error(
        capsys, ["ask", "--checkpoint", str(trained), "--smiles", "CCO", *runs]
    )
    line = _error(
        capsys, ["ask", "--checkpoint", str(trained), "--smiles", "C1CC", QUESTION, *runs]
    )
    assert "--smiles" in line and "C1CC" in line


def test_resume_without_state_and_unknown_llm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _error(capsys, ["train", "--data", str(DATA / "qa.jsonl"), "--out", str(tmp_path / "x"),
                           "--resume", "--runs", str(tmp_path / "runs"), *FAST])  # fmt: skip
    assert "--resume" in line
    line = _error(capsys, ["train", "--data", str(DATA / "qa.jsonl"), "--llm", str(tmp_path / "no"),
                           "--out", str(tmp_path / "y"), "--runs", str(tmp_path / "runs"), *FAST])  # fmt: skip
    assert "--llm" in line and not (tmp_path / "y").exists()


def test_another_llm_is_refused(
    trained: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from shared_core.models import tiny_lm

    model, tok = tiny_lm(
        WORDS, specials={"pad": "<pad>", "bos": "<s>", "eos": "</s>", "unk": "<unk>"},
        split=r"[a-z]+|\S", hidden_size=16, num_layers=1, num_heads=2, seed=1,
    )  # fmt: skip
    other = tmp_path / "other-llama"
    model.save_pretrained(other)
    tok.save_pretrained(other)
    line = _error(capsys, ["ask", "--checkpoint", str(trained), "--llm", str(other), "--smiles",
                           "CCO", QUESTION, "--runs", str(tmp_path / "runs")])  # fmt: skip
    assert "--checkpoint" in line and "fingerprint" in line


def test_peak_patching_option(tmp_path: Path, llm_dir: Path) -> None:
    from edt_former.qa_model import EDTFormerQA

    out = tmp_path / "peak"
    assert _train(out, llm_dir, "--set", "patching=peak") == 0
    qa = EDTFormerQA.from_pretrained(out)
    assert qa.config.patching == "peak"
    assert len(qa.answer(["CCO"], [QUESTION], max_new_tokens=2)) == 1
