import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from shared_core.chat import ChatClient, ChatError, _extract_content


class _Handler(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str | None, dict]]] = []
    fail_first: ClassVar[int] = 0  # answer 503 this many times first

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append((self.path, self.headers.get("Authorization"), body))
        if type(self).fail_first > 0:
            type(self).fail_first -= 1
            self.send_error(503)
            return
        if body["model"] == "refuse":
            self.send_error(400)
            return
        text = "hello " + body["messages"][-1]["content"]
        out = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]})
        if body["model"] == "broken":
            out = json.dumps({"answer": text})
        data = out.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.seen, _Handler.fail_first = [], 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_request_shape_key_and_both_url_forms(server: str) -> None:
    msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "you"}]
    for base in (server, server + "/v1/"):
        client = ChatClient(base, "m", api_key="sk-x", timeout=5)
        assert client.complete(msgs, temperature=0.7) == "hello you"
    path, auth, body = _Handler.seen[-1]
    assert path == "/v1/chat/completions" and auth == "Bearer sk-x"
    assert body == {"model": "m", "messages": msgs, "temperature": 0.7}  # no max_tokens sent
    ChatClient(server, "m", timeout=5).complete(msgs, temperature=0, max_tokens=7)
    assert _Handler.seen[-1][2]["max_tokens"] == 7


def test_retries_a_5xx_then_answers_and_fails_fast_on_a_4xx(server: str) -> None:
    _Handler.fail_first = 2
    msgs = [{"role": "user", "content": "x"}]
    assert ChatClient(server, "m", timeout=5, max_retries=2).complete(msgs, temperature=0)
    assert len(_Handler.seen) == 3
    _Handler.fail_first = 1
    with pytest.raises(ChatError, match="no answer after 1 tries"):
        ChatClient(server, "m", timeout=5, max_retries=0).complete(msgs, temperature=0)
    with pytest.raises(ChatError, match="HTTP 400"):
        ChatClient(server, "refuse", timeout=5).complete(msgs, temperature=0)
    with pytest.raises(ChatError, match="choices"):
        ChatClient(server, "broken", timeout=5).complete(msgs, temperature=0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"base_url": "localhost:8000"}, "base_url"),
        ({"model": " "}, "model"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": float("nan")}, "timeout"),
        ({"max_retries": -1}, "max_retries"),
    ],
)
def test_bad_arguments(kwargs: dict, match: str) -> None:
    args = {"base_url": "http://127.0.0.1:1", "model": "m", **kwargs}
    with pytest.raises(ValueError, match=match):
        ChatClient(**args)


def test_extract_content_names_what_is_missing() -> None:
    assert _extract_content({"choices": [{"message": {"content": "ok"}}]}) == "ok"
    with pytest.raises(ChatError, match="content is NoneType"):
        _extract_content({"choices": [{"message": {"content": None}}]})
    with pytest.raises(ChatError, match="choices"):
        _extract_content([])
