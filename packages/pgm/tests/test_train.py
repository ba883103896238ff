import torch
from masked_diffusion import LogLinearSchedule, TrainConfig, train
from pgm import PartitionTransformer, PGMConfig, pgm_confidence_sample, pgm_loss, pgm_nelbo

S = LogLinearSchedule()


def _loss(v):
    return lambda m, b, g: pgm_loss(m, b, S, v, generator=g).loss


def test_planted_signal_constant_sequences_are_learned():
    """Every sequence repeats one random token: any visible token gives away all the others."""
    g = torch.Generator().manual_seed(0)
    v, n = 5, 8
    data = torch.randint(0, v, (512, 1), generator=g).expand(512, n).contiguous()
    torch.manual_seed(0)
    m = PartitionTransformer(PGMConfig(v, n, 32, 2, 1, 1))
    cfg = TrainConfig(
        steps=150, batch_size=32, lr=3e-3, warmup=10, device="cpu", show_progress=False
    )
    train(m, _loss(v), data, cfg)
    # optimum: log(5) for the first revealed token, then 0, i.e. log(5) / 8 = 0.20 nats/token
    val = pgm_nelbo(m, data[:64], S, v, n_samples=4)
    assert val < 0.5 < 1.6  # uniform would be log(5) = 1.61
    x = pgm_confidence_sample(m, steps=4, batch_size=16, generator=torch.Generator().manual_seed(1))
    constant = (x == x[:, :1]).all(dim=1).float().mean()
    assert constant > 0.8


def test_resume_gives_the_same_model(tmp_path):
    v, n = 6, 8
    data = torch.randint(0, v, (64, n), generator=torch.Generator().manual_seed(0))

    def fresh():
        torch.manual_seed(0)
        return PartitionTransformer(PGMConfig(v, n, 16, 2, 1, 1))

    kw = dict(steps=6, batch_size=8, device="cpu", show_progress=False)
    a = fresh()
    train(a, _loss(v), data, TrainConfig(**kw))
    b = fresh()
    cfg = TrainConfig(checkpoint_path=str(tmp_path / "ck.pt"), **kw)
    train(b, _loss(v), data, cfg, stop_at=3)
    b = fresh()
    train(b, _loss(v), data, cfg, resume=True)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb)
