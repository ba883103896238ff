"""Reward-scoring throughput (pairs/s) batched vs unbatched, and augmentation throughput with
the oracle cache cold vs warm. Prints the ratios.

    python benchmarks/bench_scoring.py [--quick] [--pairs N] [--tiny]

Uses the offline MiniLM encoder when ``crome[minilm]`` is installed (else, or with --tiny, a
random 2-layer BERT). The oracle is a local OpenAI-compatible HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import torch
from crome import world as W
from crome.augment import AugmentConfig, augment, basic_verifier
from crome.cache import OracleCache
from crome.model import RewardModel, minilm_path
from crome.oracle import LLMOracle, OpenAIBackend


def _model(tiny: bool) -> tuple[RewardModel, str]:
    if not tiny:
        try:
            return RewardModel.from_backbone(minilm_path(), max_length=48), "MiniLM-L6 (22.7M)"
        except FileNotFoundError:
            pass
    from transformers import BertConfig, BertModel, BertTokenizerFast

    words = sorted(
        {w.lower() for r in W.make_world().train for w in (r.prompt + " " + r.chosen).split()}
    )
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])}
    tok = BertTokenizerFast(vocab=vocab)
    cfg = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
    )
    return RewardModel(BertModel(cfg), tok), "random BERT (2 layers, hidden 32)"


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes (< 1 min on 2 CPU cores)")
    ap.add_argument("--pairs", type=int, default=0, help="pairs to score (default 64, quick 24)")
    ap.add_argument("--tiny", action="store_true", help="use a random 2-layer BERT")
    args = ap.parse_args()
    n = args.pairs or (24 if args.quick else 64)
    torch.set_num_threads(2)
    model, name = _model(args.tiny)
    rows = W.make_world(W.WorldConfig(n_train=n, n_test=1)).train
    q, a = [r.prompt for r in rows], [r.chosen for r in rows]
    model.score(q[:4], a[:4])  # warm-up

    t = time.perf_counter()
    model.score(q, a, batch_size=1)
    unbatched = n / (time.perf_counter() - t)
    t = time.perf_counter()
    model.score(q, a, batch_size=32)
    batched = n / (time.perf_counter() - t)
    print(f"reward scoring, {name}, {n} (prompt, answer) pairs on CPU")
    print(f"  unbatched (batch 1) : {unbatched:8.1f} pairs/s")
    print(f"  batched   (batch 32): {batched:8.1f} pairs/s")
    print(f"  ratio batched/unbatched: {batched / unbatched:.2f}x")

    httpd = HTTPServer(("127.0.0.1", 0), _Chat)
    th = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    th.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    aug_rows = rows[: max(8, n // 2)]
    with tempfile.TemporaryDirectory() as d:
        rates = []
        for label in ("cold", "warm"):
            oracle = LLMOracle(OpenAIBackend(url, "bench-model", timeout=10), cache=OracleCache(d))
            t = time.perf_counter()
            augment(aug_rows, oracle, AugmentConfig(iqn=False), verify=basic_verifier)
            dt = time.perf_counter() - t
            rates.append(len(aug_rows) / dt)
            print(
                f"augmentation, cache {label}: {rates[-1]:8.1f} source pairs/s ({oracle.calls} oracle calls)"
            )
        print(
            f"  ratio warm/cold: {rates[1] / rates[0]:.2f}x (local server, zero model latency: a lower bound)"
        )
    httpd.shutdown()
    httpd.server_close()


if __name__ == "__main__":
    main()
