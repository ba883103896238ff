"""`fit_flax` (JAX/optax) trains the Flax predictor along the same curve as `shared_core.train.fit`."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
nnx = pytest.importorskip("flax.nnx")
torch = pytest.importorskip("torch")
pytest.importorskip("optax")

from convt3.data import pde_trajectories  # noqa: E402
from convt3.experiments.physics import forced_response_io  # noqa: E402
from convt3.flax import FramePredictor, load_torch_state_dict  # noqa: E402
from convt3.flax.train import fit_flax  # noqa: E402
from convt3.torch import FramePredictor as TorchPredictor  # noqa: E402
from convt3.torch import PredictorConfig  # noqa: E402

from shared_core.train import TrainConfig, fit, step_generator  # noqa: E402

STEPS, BATCH = 12, 2


def test_the_forced_heat_task_trains_alike_in_torch_and_jax():
    """The reproduction's task and recipe, small: same weights, batches and schedule."""
    traj = pde_trajectories("heat", 6, 9, 6, seed=0)
    x, y = (t.double() for t in forced_response_io(traj, float(traj[:, :, 0].std())))
    config = TrainConfig(
        steps=STEPS, lr=1e-2, warmup=2, weight_decay=1e-5, betas=(0.9, 0.99)
    )  # as convt3.experiments.common.train_next_frame
    idx = [
        torch.randint(0, x.shape[0], (BATCH,), generator=step_generator(0, s)) for s in range(STEPS)
    ]
    cfg = PredictorConfig(
        in_channels=2, d_model=4, state_size=8, n_layers=1, dt_min=0.02, dt_max=0.5
    )
    torch.manual_seed(0)
    tp = TorchPredictor(cfg).double()
    with jax.enable_x64(True):
        jp = FramePredictor(
            "convt3", 2, 1, 4, 8, 1, dt_min=0.02, dt_max=0.5, param_dtype=jax.numpy.float64,
            rngs=nnx.Rngs(0),
        )  # fmt: skip
        load_torch_state_dict(jp, tp.state_dict())
        xj, yj = jax.numpy.asarray(x.numpy()), jax.numpy.asarray(y.numpy())
        jax_losses = fit_flax(
            jp,
            lambda m, b: jax.numpy.mean((m(b[0]) - b[1]) ** 2),
            lambda s: (xj[idx[s].numpy()], yj[idx[s].numpy()]),
            config,
        )
    torch_losses = fit(
        tp,
        lambda m, b: torch.mean((m(b[0]) - b[1]) ** 2),
        lambda s: (x[idx[s]], y[idx[s]]),
        config,
        show_progress=False,
        device="cpu",
    ).losses
    gap = np.max(np.abs(np.array(jax_losses) - torch_losses) / np.array(torch_losses))
    print(
        f"torch {np.round(torch_losses, 5)}\njax   {np.round(jax_losses, 5)}\nmax rel gap {gap:.2e}"
    )
    assert gap < 1e-6, (gap, jax_losses, torch_losses)
    assert np.mean(torch_losses[-3:]) < 0.5 * np.mean(torch_losses[:3])  # it does train


def test_fit_flax_rejects_bad_arguments():
    jp = FramePredictor("convs5", 1, 1, 2, 4, 1, rngs=nnx.Rngs(0))
    with pytest.raises(TypeError, match="config: expected a shared_core.train.TrainConfig"):
        fit_flax(jp, lambda m, b: 0.0, lambda s: None, {"steps": 1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="model: expected a flax.nnx.Module"):
        fit_flax(object(), lambda m, b: 0.0, lambda s: None, TrainConfig(steps=1))  # type: ignore[arg-type]
