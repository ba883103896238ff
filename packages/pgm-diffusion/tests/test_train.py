import torch
from masked_diffusion import LogLinearSchedule, row_batches
from pgm import PartitionTransformer, PGMConfig, pgm_confidence_sample, pgm_loss_fn, pgm_nelbo

from shared_core.train import TrainConfig, fit

S = LogLinearSchedule()
KW = dict(show_progress=False, device="cpu", desc="pgm train")


def _config(steps: int) -> TrainConfig:
    return TrainConfig(steps=steps, lr=3e-3, warmup=10, schedule="constant", weight_decay=0.0,
                       betas=(0.9, 0.999))  # fmt: skip


def test_planted_signal_constant_sequences_are_learned():
    """Every sequence repeats one random token: any visible token gives away all the others."""
    g = torch.Generator().manual_seed(0)
    v, n = 5, 8
    data = torch.randint(0, v, (512, 1), generator=g).expand(512, n).contiguous()
    torch.manual_seed(0)
    m = PartitionTransformer(PGMConfig(v, n, 32, 2, 1, 1))
    uniform = pgm_nelbo(m, data[:64], S, v, n_samples=4)
    fit(m, pgm_loss_fn(S, v), row_batches(data, 32, seed=0), _config(150), **KW)
    val = pgm_nelbo(m, data[:64], S, v, n_samples=4)
    # optimum: log(5) for the first revealed token, then 0, i.e. log(5) / 8 = 0.20 nats/token;
    # an untrained model pays about log(5) = 1.61 per token
    assert uniform > 1.4
    assert val < 0.5
    x = pgm_confidence_sample(m, steps=4, batch_size=16, generator=torch.Generator().manual_seed(1))
    constant = (x == x[:, :1]).all(dim=1).float().mean()
    assert constant > 0.8


def test_resume_gives_the_same_model(tmp_path):
    v, n = 6, 8
    data = torch.randint(0, v, (64, n), generator=torch.Generator().manual_seed(0))
    loss_fn, batch_fn = pgm_loss_fn(S, v), row_batches(data, 8, seed=0)

    def fresh():
        torch.manual_seed(0)
        return PartitionTransformer(PGMConfig(v, n, 16, 2, 1, 1))

    a = fresh()
    fit(a, loss_fn, batch_fn, _config(6), **KW)
    ck = tmp_path / "ck.safetensors"
    fit(fresh(), loss_fn, batch_fn, _config(6), checkpoint=ck, stop_at=3, **KW)
    b = fresh()
    fit(b, loss_fn, batch_fn, _config(6), checkpoint=ck, **KW)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb)
