import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import numpy as np
import pytest
from mathmo import PlantedTask, SearchConfig, run_search
from mathmo.llm import OpenAIOperators, chat
from mathmo.tasks.base import ModelCard


class _Handler(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict]] = []
    garbage = False

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body["_path"], body["_auth"] = self.path, self.headers.get("Authorization")
        type(self).requests.append(body)
        prompt = body["messages"][-1]["content"]
        if type(self).garbage:
            text = "I am not sure."
        elif "most promising framework" in prompt:
            text = '```json\n["good", "nonexistent", "weak"]\n```'
        elif "new settings" in prompt:
            text = json.dumps([{"x": 9}, {"x": 4.4}, {"x": "bad"}])
        elif "fixes it" in prompt:
            text = '{"x": 2.6}'
        elif "Predict the objectives" in prompt:
            n = len(json.loads(prompt.split("Predict the objectives of: ")[1].split("\n")[0]))
            text = json.dumps([[0.5, 0.5]] * n)
        else:
            text = '{"p_a": 0.8}'
        out = json.dumps(
            {"choices": [{"message": {"role": "assistant", "content": text}}]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.requests, _Handler.garbage = [], False
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_chat_sends_an_openai_request(server: str) -> None:
    assert chat(server, "m", "Which model", api_key="k") == '{"p_a": 0.8}'
    req = _Handler.requests[-1]
    assert (
        req["_path"] == "/v1/chat/completions"
        and req["_auth"] == "Bearer k"
        and req["model"] == "m"
    )
    assert [m["role"] for m in req["messages"]] == ["system", "user"]


def test_operators_parse_snap_and_fall_back(server: str) -> None:
    task = PlantedTask(("good", "weak", "bad"))
    ops = OpenAIOperators(server, "m")
    rng = np.random.default_rng(0)
    assert ops.propose_frameworks(task, 5, rng) == ["good", "weak"]
    cands = ops.propose_candidates(task, "good", [], 3, rng)
    assert len(cands) == 3 and cands[0].get("x") == 9 and cands[1].get("x") == 4  # snapped
    assert ops.fallbacks == 1  # the third item ("bad") sent that call to the fallback for the rest
    pred = ops.predict_objectives(task, cands, [], rng)
    assert pred.shape == (3, 2)
    fixed = ops.repair_candidate(task, cands[0], "Traceback ...", [], rng)
    assert fixed.framework == "good" and fixed.get("x") == 3  # 2.6 on an integer key
    assert ops.judge_pair(ModelCard("a", 2, True), ModelCard("b", 9, False)) == 0.8
    result = run_search(task, SearchConfig(rounds=6, sandbox=False), ops, seed=0)
    assert len(result.evaluations) == 6
    assert {e.candidate.framework for e in result.evaluations} == {
        "good",
        "weak",
    }  # the LLM's picks
    assert all(np.allclose(e.predicted, 0.5) for e in result.evaluations)  # the LLM's predictions


def test_garbage_answers_degrade_to_the_programmatic_search(server: str) -> None:
    _Handler.garbage = True
    task = PlantedTask(("good", "weak"))
    ops = OpenAIOperators(server, "m")
    result = run_search(task, SearchConfig(rounds=4, sandbox=False), ops, seed=0)
    assert len(result.evaluations) == 4 and ops.fallbacks >= 4


def test_unreachable_endpoint_falls_back() -> None:
    ops = OpenAIOperators("http://127.0.0.1:9/v1", "m", timeout=2.0)
    assert ops.judge_pair(ModelCard("a", 1, True), ModelCard("b", 9, False)) > 0.5
    assert ops.fallbacks == 1


@pytest.mark.parametrize(
    ("kwargs", "error"), [({"base_url": "localhost:8000"}, "base_url"), ({"model": ""}, "model")]
)
def test_operators_reject_bad_arguments(kwargs: dict, error: str) -> None:
    args = {"base_url": "http://127.0.0.1:1/v1", "model": "m", **kwargs}
    with pytest.raises(ValueError, match=error):
        OpenAIOperators(**args)
