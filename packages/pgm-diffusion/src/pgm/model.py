"""The PGM encoder-decoder: group-restricted encoder, GroupSwap layer, opposite-group decoder.

A partition splits the positions of a clean sequence ``x0`` into group 0 and group 1 (``groups``
is True for group 1). The network never sees a mask token: it reads ``x0`` itself, and the
attention masks make the logits at a position depend only on the tokens of the *other* group:

- encoder blocks: self-attention with ``C_enc[i, j] = (g_i == g_j)`` (each group is encoded alone);
- GroupSwap: a content-free query per position, ``q0_i = b + PE(pos_i) [+ pool_{other group}(h)]``,
  normalised (LayerNorm) and projected, cross-attends to the encoder outputs of the opposite group,
  ``C[i, j] = (g_i != g_j)``; its output (no residual) starts the decoder stream;
- decoder blocks: cross-attention from the stream to the final encoder output ``h`` with the same
  opposite-group mask, then an MLP; no self-attention (as in the authors' ``CrossAttnDDiTBlock``).

A BOS token (id ``vocab_size``) sits at model position 0 and is always in group 0, so a query of
group 1 always has at least one key (the sampler starts from BOS alone). Data position ``l`` is
model position ``l + 1``. Positions enter through RoPE (queries at their positions, keys at theirs)
and the absolute sinusoidal code ``PE`` of the GroupSwap queries. There is no time conditioning.

`PartitionTransformer.forward` is the full-length partitioned pass used in training;
`PartitionTransformer.forward_packed` is the inference pass: the encoder runs on the packed clean
tokens only (at their true positions) and the decoder only on the requested query positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from masked_diffusion import (
    PreNormBlock,
    TransformerSize,
    apply_rotary,
    feed_forward,
    rotary_angles,
    timestep_embedding,
)
from torch import nn

PRE_QUERY_MODES = ("learn", "learn+freqs", "learn+freqs+mean", "learn+freqs+logsumexp")
QUERY_PROJ_MODES = ("linear", "mlp4")
_NEG = -1e9  # additive mask: exp(_NEG - max) underflows to exactly 0 in float32


@dataclass(frozen=True)
class PGMConfig(TransformerSize):
    """Size of a partition model (authors' default split: half encoder, half decoder).

    pre_query: content of the GroupSwap queries, ``"learn"`` (b only), ``"learn+freqs"`` (b + PE,
        the authors' default), ``"learn+freqs+mean"`` / ``"learn+freqs+logsumexp"`` (plus the mean /
        per-feature logsumexp of the opposite group's encoder outputs; LM1B ablations).
    query_proj: ``"linear"`` (default) or ``"mlp4"`` (Linear H->4H, SiLU, Linear 4H->H).
    grid: ``(H, W)`` with ``H * W = seq_len`` switches to 2-D axial RoPE over the row-major grid
        (pixel ``(r, c)`` at RoPE position ``(r + 1, c + 1)``, BOS at ``(0, 0)``), as
        `masked_diffusion.BackboneConfig(grid=...)` does for the MDLM image baseline.
    learned_positions: add a learned absolute position embedding (N(0, 0.02), one row per model
        position) to the input tokens and to the GroupSwap queries. RoPE alone is relative,
        so on images the MDLM baseline adds one too (``learned_positions=True``); in PGM the
        GroupSwap query plays the role of MDLM's mask-token input, so it gets the same code.
    query_residual: add the projected query to the GroupSwap output (a residual around its
        cross-attention). Off by default, as in the authors' ``GroupSwapLayer``. Without it the
        output is a mixture of the opposite group's values only, so when that group is BOS alone
        (the first sampling step) every position gets the same prediction; with it the
        position code reaches the decoder stream directly. No extra parameters.
    """

    n_encoder: int = 2
    n_decoder: int = 2
    mlp_ratio: int = 4
    pre_query: str = "learn+freqs"
    query_proj: str = "linear"
    rope_base: float = 10000.0
    grid: tuple[int, int] | None = None
    learned_positions: bool = False
    query_residual: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()  # vocab_size, seq_len, d_model, n_heads: positive ints
        for name in ("n_encoder", "mlp_ratio"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        if isinstance(self.n_decoder, bool) or not isinstance(self.n_decoder, int):
            raise ValueError(f"n_decoder: expected an int >= 0, got {self.n_decoder!r}")
        if self.n_decoder < 0:
            raise ValueError(f"n_decoder: expected an int >= 0, got {self.n_decoder!r}")
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(
                f"n_heads: d_model={self.d_model} / n_heads={self.n_heads} must be an even int"
            )
        if self.grid is not None:
            if (
                not isinstance(self.grid, tuple)
                or len(self.grid) != 2
                or any(isinstance(g, bool) or not isinstance(g, int) or g <= 0 for g in self.grid)
                or self.grid[0] * self.grid[1] != self.seq_len
            ):
                raise ValueError(
                    f"grid: expected a tuple (H, W) of positive ints with H * W == "
                    f"seq_len={self.seq_len}, got {self.grid!r}"
                )
            if (self.d_model // self.n_heads) % 4:
                raise ValueError(
                    f"grid: 2-D RoPE needs a head dim divisible by 4, got d_model={self.d_model} "
                    f"/ n_heads={self.n_heads}"
                )
        for name in ("learned_positions", "query_residual"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(
                    f"{name}: expected a bool, got {type(getattr(self, name)).__name__}"
                )
        if (
            isinstance(self.rope_base, bool)
            or not isinstance(self.rope_base, (int, float))
            or not 1.0 < self.rope_base < float("inf")
        ):
            raise ValueError(f"rope_base: expected a finite float > 1, got {self.rope_base!r}")
        if self.pre_query not in PRE_QUERY_MODES:
            raise ValueError(
                f"pre_query: expected one of {PRE_QUERY_MODES}, got {self.pre_query!r}"
            )
        if self.query_proj not in QUERY_PROJ_MODES:
            raise ValueError(
                f"query_proj: expected one of {QUERY_PROJ_MODES}, got {self.query_proj!r}"
            )


def masked_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allow: torch.Tensor | None
) -> torch.Tensor:
    """Multi-head attention restricted by a boolean mask.

    Args:
        q: (batch, heads, Lq, d); k, v: (batch, heads, Lk, d).
        allow: (batch, Lq, Lk), True where query i may attend to key j; None = every key
            (the unmasked fast path of the packed sampler).

    Returns:
        (batch, heads, Lq, d). A query with no allowed key gets exactly 0 (an empty group carries
        no information), and disallowed keys get exactly zero weight and zero gradient.
    """
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor) or x.ndim != 4:
            shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"{name}: expected a (batch, heads, length, d) tensor, got {shape}")
    if k.shape[:3] != v.shape[:3] or k.shape[:2] != q.shape[:2] or k.shape[-1] != q.shape[-1]:
        raise ValueError(
            f"v: expected q, k, v as (batch, heads, Lq, d), (batch, heads, Lk, d), "
            f"(batch, heads, Lk, d_v), got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if allow is None:
        return F.scaled_dot_product_attention(q, k, v)
    want = (q.shape[0], q.shape[2], k.shape[2])
    if not isinstance(allow, torch.Tensor) or allow.dtype != torch.bool or allow.shape != want:
        what = (
            f"{allow.dtype} {tuple(allow.shape)}"
            if isinstance(allow, torch.Tensor)
            else type(allow).__name__
        )
        raise ValueError(
            f"allow: expected a bool tensor of shape (batch, Lq, Lk) = {want}, got {what}"
        )
    bias = torch.zeros(allow.shape, dtype=q.dtype, device=q.device).masked_fill(~allow, _NEG)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias[:, None])
    return torch.where(allow.any(-1)[:, None, :, None], out, torch.zeros_like(out))


def _heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    b, n, d = x.shape
    return x.view(b, n, n_heads, d // n_heads).transpose(1, 2)


def _merge(x: torch.Tensor) -> torch.Tensor:
    b, h, n, dh = x.shape
    return x.transpose(1, 2).reshape(b, n, h * dh)


class EncoderBlock(PreNormBlock):
    """Pre-norm self-attention (RoPE, group mask) + GELU MLP, residual both (MDLM's block
    layers, `masked_diffusion.PreNormBlock`, without adaLN)."""

    def __init__(self, cfg: PGMConfig) -> None:
        super().__init__(cfg.d_model, cfg.n_heads, cfg.mlp_ratio)

    def forward(
        self, h: torch.Tensor, angles: torch.Tensor, allow: torch.Tensor | None
    ) -> torch.Tensor:
        """h (batch, L, d); angles (L, d_head/2) or (batch, 1, L, d_head/2); allow (batch, L, L)."""
        q, k, v = (_heads(z, self.n_heads) for z in self.qkv(self.norm1(h)).chunk(3, dim=-1))
        a = masked_attention(apply_rotary(q, angles), apply_rotary(k, angles), v, allow)
        h = h + self.proj(_merge(a))
        return h + self.mlp(self.norm2(h))


class GroupSwap(nn.Module):
    """The GroupSwap layer: content-free queries cross-attending to the opposite group.

    ``q0_i = b + PE(pos_i) [+ pool_i]`` -> LayerNorm -> projection (linear or MLP) = Q (RoPE at
    the query positions); ``K, V = W_kv h`` (RoPE on K at the key positions); masked MHA;
    output projection. No residual (the authors' layer): the output is the initial decoder
    stream; ``query_residual=True`` adds the projected query to it.
    """

    def __init__(self, cfg: PGMConfig, n_positions: int) -> None:
        super().__init__()
        d = cfg.d_model
        self.n_heads = cfg.n_heads
        self.mode = cfg.pre_query
        self.residual = cfg.query_residual
        # b: one learned vector shared by all positions (nn.Embedding(1, H) in the authors' code,
        # hence its N(0, 1) initialisation; the LayerNorm below fixes the scale anyway).
        self.base = nn.Parameter(torch.randn(d))
        # PE: sinusoidal absolute code [cos | sin], base 10000 (= timestep_embedding of pos/1000).
        pos = torch.arange(n_positions, dtype=torch.float32)
        self.pe: torch.Tensor
        self.register_buffer("pe", timestep_embedding(pos / 1000.0, d), persistent=False)
        self.norm = nn.LayerNorm(d)
        self.query: nn.Module
        if cfg.query_proj == "linear":
            self.query = nn.Linear(d, d)
        else:
            self.query = nn.Sequential(nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))
        self.kv = nn.Linear(d, 2 * d)
        self.out = nn.Linear(d, d)

    @property
    def pools(self) -> bool:
        return self.mode.endswith(("mean", "logsumexp"))

    def pool(self, h: torch.Tensor, member: torch.Tensor) -> torch.Tensor:
        """Summary (batch, d) of the rows of h (batch, L, d) where member (batch, L) is True."""
        count = member.sum(dim=1, keepdim=True)
        if self.mode.endswith("mean"):
            return (h * member[..., None]).sum(dim=1) / count.clamp(min=1)
        lse = torch.logsumexp(h.masked_fill(~member[..., None], -torch.inf), dim=1)
        return torch.where(count > 0, lse, torch.zeros_like(lse))

    def forward(
        self,
        h: torch.Tensor,
        k_angles: torch.Tensor,
        q_pos: torch.Tensor,
        q_angles: torch.Tensor,
        allow: torch.Tensor | None,
        pool: torch.Tensor | None,
    ) -> torch.Tensor:
        """h (batch, Lk, d) encoder output; q_pos (batch, Lq) model positions; -> (batch, Lq, d)."""
        q0 = self.base.expand(*q_pos.shape, -1)
        if "freqs" in self.mode:
            q0 = q0 + self.pe[q_pos]
        if pool is not None:
            q0 = q0 + pool
        query = self.query(self.norm(q0))
        q = _heads(query, self.n_heads)
        k, v = (_heads(z, self.n_heads) for z in self.kv(h).chunk(2, dim=-1))
        a = masked_attention(apply_rotary(q, q_angles), apply_rotary(k, k_angles), v, allow)
        out = self.out(_merge(a))
        return out + query if self.residual else out


class DecoderBlock(nn.Module):
    """Cross-attention (stream -> final encoder output, opposite-group mask) + MLP, residual."""

    def __init__(self, cfg: PGMConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.n_heads = cfg.n_heads
        self.q_norm = nn.LayerNorm(d)
        self.kv_norm = nn.LayerNorm(d)
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = feed_forward(d, cfg.mlp_ratio)

    def forward(
        self,
        x: torch.Tensor,
        h: torch.Tensor,
        q_angles: torch.Tensor,
        k_angles: torch.Tensor,
        allow: torch.Tensor | None,
    ) -> torch.Tensor:
        q = apply_rotary(_heads(self.q(self.q_norm(x)), self.n_heads), q_angles)
        k, v = (_heads(z, self.n_heads) for z in self.kv(self.kv_norm(h)).chunk(2, dim=-1))
        x = x + self.proj(_merge(masked_attention(q, apply_rotary(k, k_angles), v, allow)))
        return x + self.mlp(self.norm2(x))


def check_groups(groups: torch.Tensor, x0: torch.Tensor) -> torch.Tensor:
    """Validate a partition (batch, length) of bool / {0, 1} and return it as bool (True = group 1)."""
    if not isinstance(groups, torch.Tensor):
        raise TypeError(f"groups: expected a torch.Tensor, got {type(groups).__name__}")
    if tuple(groups.shape) != tuple(x0.shape):
        raise ValueError(f"groups: expected shape {tuple(x0.shape)}, got {tuple(groups.shape)}")
    if groups.dtype != torch.bool:
        if torch.is_floating_point(groups) or not ((groups == 0) | (groups == 1)).all():
            raise ValueError("groups: expected a bool tensor or integer values in {0, 1}")
        groups = groups.bool()
    return groups


class PartitionTransformer(nn.Module):
    """The PGM network ``p_theta(x0_l | x0 of the other group)``; logits (batch, L, vocab_size).

    Initialisation: token embeddings N(0, 0.02); the output head is zero-initialised (as
    MDLM's final layer), so the untrained model predicts the uniform distribution.
    """

    def __init__(self, cfg: PGMConfig) -> None:
        super().__init__()
        if not isinstance(cfg, PGMConfig):
            raise TypeError(f"cfg: expected a PGMConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        d, n_pos = cfg.d_model, cfg.seq_len + 1
        self.embed = nn.Embedding(cfg.vocab_size + 1, d)  # + BOS (id vocab_size); no mask token
        nn.init.normal_(self.embed.weight, std=0.02)
        self.pos_embed: nn.Parameter | None = None
        if cfg.learned_positions:
            self.pos_embed = nn.Parameter(torch.randn(n_pos, d) * 0.02)
        self.encoder = nn.ModuleList(EncoderBlock(cfg) for _ in range(cfg.n_encoder))
        self.swap = GroupSwap(cfg, n_pos)
        self.decoder = nn.ModuleList(DecoderBlock(cfg) for _ in range(cfg.n_decoder))
        self.norm_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, cfg.vocab_size)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)
        pos = torch.arange(n_pos)
        if cfg.grid is not None:
            rows, cols = torch.meshgrid(
                torch.arange(cfg.grid[0]), torch.arange(cfg.grid[1]), indexing="ij"
            )
            # BOS at (0, 0), pixel (r, c) at (r + 1, c + 1): relative offsets between pixels kept
            pixels = torch.stack([rows.flatten(), cols.flatten()], dim=-1) + 1
            pos = torch.cat([torch.zeros(1, 2, dtype=torch.long), pixels])
        angles = rotary_angles(pos, d // cfg.n_heads, cfg.rope_base)
        self.angles: torch.Tensor
        self.register_buffer("angles", angles, persistent=False)

    @property
    def bos_id(self) -> int:
        return self.cfg.vocab_size

    # ------------------------------------------------------------------ shared pieces
    def encode(
        self, h: torch.Tensor, angles: torch.Tensor, allow: torch.Tensor | None
    ) -> torch.Tensor:
        """Run the encoder blocks on embeddings h (batch, L, d) with self-attention mask `allow`."""
        for block in self.encoder:
            h = block(h, angles, allow)
        return h

    def decode(
        self,
        h: torch.Tensor,
        k_angles: torch.Tensor,
        q_pos: torch.Tensor,
        q_angles: torch.Tensor,
        allow: torch.Tensor | None,
        pool: torch.Tensor | None,
    ) -> torch.Tensor:
        """GroupSwap + decoder blocks + head: logits (batch, Lq, vocab_size) at model positions q_pos."""
        if self.pos_embed is not None:
            pos_q = self.pos_embed[q_pos]
            pool = pos_q if pool is None else pool + pos_q
        x = self.swap(h, k_angles, q_pos, q_angles, allow, pool)
        for block in self.decoder:
            x = block(x, h, q_angles, k_angles, allow)
        return self.head(self.norm_f(x))

    def _check_x0(self, x: torch.Tensor, name: str) -> None:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
        if x.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"{name}: expected an int64/int32 tensor, got dtype {x.dtype}")
        if x.ndim != 2 or x.shape[0] == 0:
            raise ValueError(
                f"{name}: expected shape (batch, length) with batch >= 1, got {tuple(x.shape)}"
            )
        if x.numel() and (int(x.min()) < 0 or int(x.max()) >= self.cfg.vocab_size):
            raise ValueError(
                f"{name}: token ids must lie in [0, {self.cfg.vocab_size - 1}], "
                f"got range [{int(x.min())}, {int(x.max())}]"
            )

    # ------------------------------------------------------------------ training pass
    def forward(self, x0: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
        """Full-length partitioned pass: logits (batch, L, vocab_size) for clean x0 (batch, L).

        ``groups`` (batch, L) is True (or 1) for group 1. The logits at a group-1 position are
        a function of the group-0 tokens (and BOS) only, and vice versa.
        """
        self._check_x0(x0, "x0")
        if x0.shape[1] != self.cfg.seq_len:
            raise ValueError(
                f"x0: expected shape (batch, {self.cfg.seq_len}), got {tuple(x0.shape)}"
            )
        g = check_groups(groups, x0)
        b = x0.shape[0]
        bos = torch.full((b, 1), self.bos_id, dtype=x0.dtype, device=x0.device)
        h = self.embed(torch.cat([bos, x0], dim=1))
        if self.pos_embed is not None:
            h = h + self.pos_embed
        return self.forward_embedded(h, g)

    def forward_embedded(self, h: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
        """`forward` from input embeddings h (batch, L + 1, d), BOS first (for gradient checks)."""
        b, n = groups.shape
        g = torch.cat([torch.zeros(b, 1, dtype=torch.bool, device=groups.device), groups], dim=1)
        h = self.encode(h, self.angles, g[:, :, None] == g[:, None, :])
        gq = g[:, 1:]
        allow = gq[:, :, None] != g[:, None, :]  # C[i, j] = (g_i != g_j)
        pool = None
        if self.swap.pools:
            pool_of_0, pool_of_1 = self.swap.pool(h, ~g), self.swap.pool(h, g)
            pool = torch.where(gq[..., None], pool_of_0[:, None], pool_of_1[:, None])
        q_pos = torch.arange(1, n + 1, device=h.device).expand(b, n)
        return self.decode(h, self.angles, q_pos, self.angles[1:], allow, pool)

    # ------------------------------------------------------------------ inference pass
    def forward_packed(
        self,
        clean: torch.Tensor,
        clean_pos: torch.Tensor,
        query_pos: torch.Tensor,
        clean_valid: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Packed pass: logits (batch, Q, vocab_size) at `query_pos` given only the clean tokens.

        Args:
            clean: (batch, C) clean tokens, in any order (C may be 0).
            clean_pos: (batch, C) their data positions in ``[0, seq_len)``.
            query_pos: (batch, Q) data positions to predict.
            clean_valid: (batch, C) bool, False for padding (rows with fewer clean tokens).

        The encoder runs on BOS + the C clean tokens only (sequence length C + 1), with RoPE at
        their true positions; the decoder runs on the Q queries only. This equals `forward` with
        group 0 = the clean tokens and the queries in group 1.
        """
        self._check_x0(clean, "clean")
        b, c = clean.shape
        for name, p in (("clean_pos", clean_pos), ("query_pos", query_pos)):
            if not isinstance(p, torch.Tensor) or p.ndim != 2 or p.shape[0] != b:
                raise ValueError(f"{name}: expected a (batch={b}, n) integer tensor")
            if p.numel() and (int(p.min()) < 0 or int(p.max()) >= self.cfg.seq_len):
                raise ValueError(f"{name}: positions must lie in [0, {self.cfg.seq_len - 1}]")
        if clean_pos.shape != clean.shape:
            raise ValueError(
                f"clean_pos: expected shape {tuple(clean.shape)}, got {tuple(clean_pos.shape)}"
            )
        dev = clean.device
        padded = clean_valid is not None
        if clean_valid is None:
            clean_valid = torch.ones(b, c, dtype=torch.bool, device=dev)
        elif tuple(clean_valid.shape) != (b, c) or clean_valid.dtype != torch.bool:
            raise ValueError(f"clean_valid: expected a bool tensor of shape {(b, c)}")
        bos = torch.full((b, 1), self.bos_id, dtype=clean.dtype, device=dev)
        tokens = torch.cat([bos, clean], dim=1)
        pos = torch.cat([torch.zeros(b, 1, dtype=torch.long, device=dev), clean_pos.long() + 1], 1)
        valid = torch.cat([torch.ones(b, 1, dtype=torch.bool, device=dev), clean_valid], dim=1)
        k_angles = self.angles[pos][:, None]
        # without padding every key is allowed: no mask at all (SDPA's fast path)
        enc_allow = valid[:, None, :].expand(b, c + 1, c + 1) if padded else None
        h = self.embed(tokens)
        if self.pos_embed is not None:
            h = h + self.pos_embed[pos]
        h = self.encode(h, k_angles, enc_allow)
        q_pos = query_pos.long() + 1
        allow = valid[:, None, :].expand(b, q_pos.shape[1], c + 1) if padded else None
        pool = None
        if self.swap.pools:
            pool = self.swap.pool(h, valid)[:, None].expand(b, q_pos.shape[1], -1)
        return self.decode(h, k_angles, q_pos, self.angles[q_pos][:, None], allow, pool)
