import json

import pytest
from crome.data import PairRow, read_pairs, split_by_label, write_pairs
from crome.evaluate import load_rewardbench


def _rows():
    return [
        PairRow("q1", "good", "bad", subset="alpacaeval-easy", meta={"k": 1}),
        PairRow("q2", "x", "y", label="tie", provenance="neutral-iqn", subset="mt-bench-hard"),
    ]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_roundtrip(tmp_path, suffix):
    pytest.importorskip("pyarrow") if suffix == ".parquet" else None
    p = write_pairs(tmp_path / f"rows{suffix}", _rows())
    assert read_pairs(p) == _rows()
    pref, tie = split_by_label(read_pairs(p))
    assert len(pref) == 1 and len(tie) == 1


def test_reads_the_real_rewardbench_layout(tmp_path):
    rb = [
        {
            "prompt": "Hi",
            "chosen": "Hello!",
            "chosen_model": "gpt4",
            "rejected": "Go away",
            "rejected_model": "llama",
            "subset": "alpacaeval-easy",
            "id": 0,
        },
        {
            "prompt": "2+2?",
            "chosen": "4",
            "chosen_model": "a",
            "rejected": "5",
            "rejected_model": "b",
            "subset": "math-prm",
            "id": 1,
        },
    ]
    p = tmp_path / "filtered.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rb))
    rows = load_rewardbench(p)
    assert [r.subset for r in rows] == ["alpacaeval-easy", "math-prm"]
    assert all(r.label == "preference" for r in rows)
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rb), str(tmp_path / "filtered.parquet"))
    assert load_rewardbench(tmp_path / "filtered.parquet") == rows
    (tmp_path / "rb.json").write_text(json.dumps(rb))
    assert load_rewardbench(tmp_path / "rb.json") == rows


def test_bad_input_raises_clearly(tmp_path):
    with pytest.raises(ValueError, match="chosen"):
        PairRow("q", "", "bad")
    with pytest.raises(ValueError, match="rejected"):
        PairRow("q", "good", "   ")
    with pytest.raises(TypeError, match="prompt"):
        PairRow(3, "a", "b")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="label"):
        PairRow("q", "a", "b", label="maybe")
    p = tmp_path / "missing.jsonl"
    p.write_text(json.dumps({"prompt": "q", "chosen": "a"}) + "\n")
    with pytest.raises(ValueError, match="missing field"):
        read_pairs(p)
    p.write_text("{not json\n")
    with pytest.raises(ValueError, match="line 1"):
        read_pairs(p)
    with pytest.raises(FileNotFoundError, match="path"):
        read_pairs(tmp_path / "nope.jsonl")
    with pytest.raises(ValueError, match="jsonl"):
        write_pairs(tmp_path / "rows.csv", _rows())
    q = tmp_path / "nosubset.jsonl"
    write_pairs(q, [PairRow("q", "a", "b")])
    with pytest.raises(ValueError, match="subset"):
        load_rewardbench(q)
