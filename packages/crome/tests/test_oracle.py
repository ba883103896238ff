import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest
from crome import world as W
from crome.augmentation import AugmentConfig, augment, basic_verifier
from crome.cache import OracleCache
from crome.oracle import (
    LLMOracle,
    OpenAIBackend,
    OracleError,
    ProgrammaticOracle,
    load_prompt,
    parse_rewrite,
    parse_rubrics,
)


class CountingBackend:
    """A deterministic fake LLM: rubric JSON for rubric prompts, a tagged rewrite otherwise."""

    model_id = "fake-1"

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, messages, *, temperature, max_tokens):
        self.calls += 1
        text = messages[-1]["content"]
        if "rubrics" in text and "JSON" in text:
            return '{"rubrics": ["correctness", "relevance"]}'
        return f"<answer>rewritten {self.calls}</answer>"


def _rows():
    return W.make_world(W.WorldConfig(n_train=6, n_test=2, seed=1)).train


def test_programmatic_rewrites_change_exactly_the_targeted_attribute():
    oracle = ProgrammaticOracle(seed=0)
    for r in W.make_world(W.WorldConfig(n_train=50, n_test=2)).train:
        [rubric] = oracle.rubrics(r.prompt)
        worse = oracle.rewrite(r.prompt, r.chosen, rubric, "degrade")
        better = oracle.rewrite(r.prompt, r.rejected, rubric, "upgrade")
        assert not W.is_correct(r.prompt, worse) and W.is_correct(r.prompt, better)
        assert W.parse_answer(worse).decoration == W.parse_answer(r.chosen).decoration
        assert W.parse_answer(better).decoration == W.parse_answer(r.rejected).decoration
        neutral = oracle.neutral_rewrite(r.prompt, r.chosen, [rubric])  # generic (issue 49)
        assert W.parse_answer(neutral).value == W.parse_answer(r.chosen).value
        assert neutral != r.chosen
        targeted = ProgrammaticOracle(0, neutral="oracle-knows-spurious")
        neutral = targeted.neutral_rewrite(r.prompt, r.chosen, [rubric])
        assert W.parse_answer(neutral).value == W.parse_answer(r.chosen).value
        assert W.parse_answer(neutral).decoration != W.parse_answer(r.chosen).decoration
    # deterministic: same inputs, same rewrite
    r = _rows()[0]
    assert oracle.rewrite(r.prompt, r.chosen, W.RUBRIC, "degrade") == ProgrammaticOracle(0).rewrite(
        r.prompt, r.chosen, W.RUBRIC, "degrade"
    )


def test_second_run_makes_zero_oracle_calls(tmp_path):
    rows = _rows()
    backend = CountingBackend()
    first = LLMOracle(backend, cache=OracleCache(tmp_path))
    aug1, _ = augment(rows, first, AugmentConfig(), verify=basic_verifier)
    assert backend.calls > 0 and first.calls == backend.calls
    backend2 = CountingBackend()
    second = LLMOracle(backend2, cache=OracleCache(tmp_path))
    aug2, _ = augment(rows, second, AugmentConfig(), verify=basic_verifier)
    assert backend2.calls == 0 and second.calls == 0
    assert aug1 == aug2


def test_corrupted_cache_entry_is_detected_and_rerequested(tmp_path):
    cache = OracleCache(tmp_path)
    backend = CountingBackend()
    oracle = LLMOracle(backend, cache=cache)
    first = oracle.ask("hello")
    assert backend.calls == 1 and len(cache) == 1
    [entry] = list(tmp_path.glob("*/*.json"))
    data = json.loads(entry.read_text())
    data["response"] = "tampered"
    entry.write_text(json.dumps(data))
    again = LLMOracle(backend, cache=OracleCache(tmp_path))
    got = again.ask("hello")
    assert got != "tampered" and got.startswith("<answer>")
    assert backend.calls == 2 and again.cache.corrupted == 1
    # truncated file: also detected, re-requested, then healthy again
    entry.write_text(entry.read_text()[:10])
    third = LLMOracle(backend, cache=OracleCache(tmp_path))
    third.ask("hello")
    assert third.cache.corrupted == 1 and backend.calls == 3
    fourth = LLMOracle(backend, cache=OracleCache(tmp_path))
    fourth.ask("hello")
    assert fourth.cache.hits == 1 and backend.calls == 3
    assert first.startswith("<answer>")


def test_cache_key_depends_on_model_and_prompt(tmp_path):
    cache = OracleCache(tmp_path)
    cache.put("m1", {"q": 1}, "a")
    assert cache.get("m1", {"q": 1}) == "a"
    assert cache.get("m2", {"q": 1}) is None
    assert cache.get("m1", {"q": 2}) is None
    with pytest.raises(TypeError, match="response"):
        cache.put("m1", {"q": 3}, None)  # type: ignore[arg-type]


def test_parsers():
    assert parse_rubrics('Sure: {"rubrics": ["a", "b", "a", "c"]}', 2) == ["a", "b"]
    assert parse_rubrics("1. factual accuracy\n2) clarity\n- relevance", 5) == [
        "factual accuracy",
        "clarity",
        "relevance",
    ]
    with pytest.raises(ValueError, match="no rubrics"):
        parse_rubrics("I cannot help.", 3)
    assert parse_rewrite("x <answer> new text </answer> y") == "new text"
    assert parse_rewrite("<answer>unterminated") == "unterminated"
    assert parse_rewrite("plain reply") == "plain reply"
    with pytest.raises(ValueError, match="empty"):
        parse_rewrite("<answer> </answer>")
    assert "{question}" in load_prompt("rewrite")
    with pytest.raises(ValueError, match="name"):
        load_prompt("nope")


def test_llm_oracle_falls_back_when_rubrics_do_not_parse():
    class Mute(CountingBackend):
        def complete(self, messages, *, temperature, max_tokens):
            return "no idea"

    o = LLMOracle(Mute(), max_rubrics=1)
    assert o.rubrics("What?") == ["correctness"] and o.parse_failures == 1
    with pytest.raises(ValueError, match="direction"):
        o.rewrite("q", "a", "r", "sideways")
    with pytest.raises(TypeError, match="backend"):
        LLMOracle(object())  # type: ignore[arg-type]


class _Handler(BaseHTTPRequestHandler):
    seen: ClassVar[list] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append((self.path, self.headers.get("Authorization"), body))
        if body["model"] == "broken":
            payload = {"choices": []}
        elif body["model"] == "refuse":
            self.send_response(400)
            self.end_headers()
            return
        else:
            text = body["messages"][-1]["content"]
            content = (
                '{"rubrics": ["correctness"]}'
                if "JSON" in text
                else "<answer>The answer is 5.</answer>"
            )
            payload = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
            }
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Handler.seen = []
    httpd = HTTPServer(("127.0.0.1", 0), _Handler)
    httpd.timeout = 5
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    t.join(timeout=5)


def test_openai_backend_against_local_server(server, tmp_path):
    backend = OpenAIBackend(server, "tiny-model", api_key="sk-test", timeout=5)
    oracle = LLMOracle(backend, cache=OracleCache(tmp_path))
    assert oracle.rubrics("What is 2 + 3?") == ["correctness"]
    assert (
        oracle.rewrite("What is 2 + 3?", "The answer is 4.", "correctness", "upgrade")
        == "The answer is 5."
    )
    path, auth, body = _Handler.seen[0]
    assert path == "/v1/chat/completions" and auth == "Bearer sk-test"
    assert body["model"] == "tiny-model" and body["messages"][0]["role"] == "user"
    assert set(body) == {"model", "messages", "temperature", "max_tokens"}
    n = len(_Handler.seen)
    oracle2 = LLMOracle(
        OpenAIBackend(server + "/v1", "tiny-model", api_key="sk-test"), cache=OracleCache(tmp_path)
    )
    oracle2.rubrics("What is 2 + 3?")
    assert len(_Handler.seen) == n and oracle2.calls == 0


def test_openai_backend_errors(server):
    with pytest.raises(OracleError, match="choices"):
        OpenAIBackend(server, "broken", timeout=5).complete(
            [{"role": "user", "content": "x"}], temperature=0, max_tokens=5
        )
    with pytest.raises(OracleError, match="HTTP 400"):
        OpenAIBackend(server, "refuse", timeout=5).complete(
            [{"role": "user", "content": "x"}], temperature=0, max_tokens=5
        )
    with pytest.raises(OracleError, match="no answer"):
        OpenAIBackend("http://127.0.0.1:9", "m", timeout=1, max_retries=0).complete(
            [{"role": "user", "content": "x"}], temperature=0, max_tokens=5
        )
    with pytest.raises(ValueError, match="base_url"):
        OpenAIBackend("ftp://x", "m")
    with pytest.raises(ValueError, match="model"):
        OpenAIBackend("http://x", "")
