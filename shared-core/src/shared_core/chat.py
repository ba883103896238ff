"""One client for OpenAI-compatible chat-completion endpoints (standard library HTTP only).

``ChatClient(base_url, model).complete(messages, temperature=...)`` posts to
``{base_url}/v1/chat/completions`` (a `base_url` that already ends in ``/v1`` is accepted),
retries on 429, 5xx and unreachable endpoints, and returns ``choices[0].message.content``.
Any server speaking that API works: vLLM, llama.cpp's server, Ollama, a hosted provider.
Used by crome's LLM oracle and mathmo's LLM operators.
"""

from __future__ import annotations

import json
import math
import os
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any


class ChatError(RuntimeError):
    """The endpoint could not answer: an HTTP error, no connection, or a malformed payload."""


def _extract_content(payload: Any) -> str:
    """``payload["choices"][0]["message"]["content"]``, with an error naming what is missing."""
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ChatError(
            "response: expected choices[0].message.content in the chat completion, got "
            f"{json.dumps(payload)[:200]}"
        ) from None
    if not isinstance(content, str):
        raise ChatError(f"response: choices[0].message.content is {type(content).__name__}")
    return content


class ChatClient:
    """A chat-completions endpoint; `model_id` names the model (and keys callers' caches).

    The API key comes from `api_key` or ``$OPENAI_API_KEY`` and is sent as a Bearer token
    when set. A request is tried ``1 + max_retries`` times on 429, 5xx, timeouts and refused
    connections; any other HTTP error raises `ChatError` at once.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"base_url: expected an http(s) URL such as http://127.0.0.1:8000/v1, got {base_url!r}"
            )
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model: expected a non-empty model name, got {model!r}")
        if (
            not isinstance(timeout, (int, float))
            or isinstance(timeout, bool)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise ValueError(f"timeout: expected a finite number of seconds > 0, got {timeout!r}")
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise ValueError(f"max_retries: expected an int >= 0, got {max_retries!r}")
        base = base_url.rstrip("/")
        self.url = base + ("/chat/completions" if base.endswith("/v1") else "/v1/chat/completions")
        self.model_id = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout = float(timeout)
        self.max_retries = max_retries

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float,
        max_tokens: int | None = None,
    ) -> str:
        """The model's answer to `messages` (``[{"role": ..., "content": ...}, ...]``).

        `max_tokens` is sent only when given (else the server's default applies).
        """
        request: dict[str, Any] = {
            "model": self.model_id,
            "messages": [dict(m) for m in messages],
            "temperature": temperature,
        }
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        body = json.dumps(request).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last: Exception | None = None
        for _ in range(self.max_retries + 1):
            req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    payload = json.loads(resp.read().decode("utf-8"))
                break
            except urllib.error.HTTPError as e:
                last = e
                if e.code < 500 and e.code != 429:
                    raise ChatError(f"{self.url}: HTTP {e.code} {e.reason}") from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                last = e
        else:
            raise ChatError(f"{self.url}: no answer after {self.max_retries + 1} tries ({last})")
        return _extract_content(payload)
