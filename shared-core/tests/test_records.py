import json

import pytest

from shared_core.data import JSONL_FORMATS, jsonl_format, read_jsonl, read_text, write_jsonl


def test_text_corpus(data_dir, tmp_path):
    assert read_text(data_dir / "corpus.txt").startswith("To be, or not to be")
    empty = tmp_path / "empty.txt"
    empty.write_text(" \n\n")
    with pytest.raises(ValueError, match=r"empty\.txt is empty; expected UTF-8 text"):
        read_text(empty)
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"ok\ncaf\xe9\n")
    with pytest.raises(ValueError, match=r"latin\.txt, line 2: .* not UTF-8"):
        read_text(latin)


@pytest.mark.parametrize(
    ("name", "format"),
    [
        ("text", "language_modeling"),
        ("prompt_completion", "prompt_completion"),
        ("conversational", "conversational"),
        ("preference", "preference"),
    ],
)
def test_each_trl_format_is_detected(data_dir, tmp_path, name, format):
    result = read_jsonl(data_dir / f"{name}.jsonl")
    assert result.format == format and len(result) == 2
    assert all(k in result.records[0] for k in JSONL_FORMATS[format])
    out = write_jsonl(tmp_path / "out.jsonl", result.records, format=format)
    assert read_jsonl(out).records == result.records


def test_bad_json_line_is_named_or_skipped(data_dir):
    with pytest.raises(ValueError, match=r"bad\.jsonl, line 2: not valid JSON"):
        read_jsonl(data_dir / "bad.jsonl")
    result = read_jsonl(data_dir / "bad.jsonl", skip_invalid=True)
    assert len(result) == 2 and [n for n, _ in result.skipped] == [2]


def test_every_record_must_have_the_first_records_format(tmp_path):
    path = tmp_path / "mixed.jsonl"
    rows = [{"prompt": "a", "completion": "b"}, {"text": "c"}, {"prompt": "d", "completion": 4}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=r"line 2: missing field\(s\) \['prompt', 'completion'\]"):
        read_jsonl(path)
    result = read_jsonl(path, skip_invalid=True)
    assert result.format == "prompt_completion"
    assert (
        result.lines == [1]
        and [n for n, _ in result.skipped] == [2, 3]
        and "'completion': expected a string" in (result.skipped[1][1])
    )
    with pytest.raises(ValueError, match="line 1: .*'messages'"):
        read_jsonl(path, format="conversational")


def test_messages_and_formats_are_checked(tmp_path):
    with pytest.raises(ValueError, match="fit no dataset format"):
        jsonl_format({"question": "?"})
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"messages": [{"role": "user"}]}) + "\n[1, 2]\n")
    with pytest.raises(ValueError, match=r"line 1: 'messages'\[0\]: expected \{'role'"):
        read_jsonl(path)
    path.write_text(json.dumps({"text": "ok"}) + "\n[1, 2]\n")
    with pytest.raises(ValueError, match="line 2: expected a JSON object, got list"):
        read_jsonl(path)
    with pytest.raises(ValueError, match=r"records\[0\]: missing field"):
        write_jsonl(tmp_path / "x.jsonl", [{"text": "a"}], format="preference")
    with pytest.raises(ValueError, match="format: expected one of"):
        read_jsonl(path, format="chat")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"empty\.jsonl is empty"):
        read_jsonl(empty)
