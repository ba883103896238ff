"""Parameters of a ConvT3/ConvS5 SSM layer, framework-free: initialisation and the maps to the maths.

Both the Flax and the torch layer store exactly these arrays (same names, shapes and
meaning), initialise them with `init_ssm_params`, and map them to the quantities of
`convt3.reference` the way the numpy functions here do, so a test can feed one parameter set
to all three. Stored (P = state_size // 2 complex state channels):

- ``Lambda_re``, ``Lambda_im`` ``(P,)``: HiPPO-N eigenvalues (ConvS5). The continuous
  eigenvalue is ``-softplus(Lambda_re) + i Lambda_im`` (ConvT3's Hurwitz map) or
  ``min(Lambda_re, -1e-4) + i Lambda_im`` (ConvS5's clipping).
- ``log_step`` ``(P,)``: ``log Delta``, uniform in ``[log dt_min, log dt_max]``.
- ``B`` ``(P, U, k_B, k_B, 2)``: ``V^{-1} B`` (real, imaginary), B He-normal (fan in ``U k_B^2``).
- ``C`` ``(U, P, k_C, k_C, 2)``: ``C V`` (real, imaginary), C He-normal (fan in ``2P k_C^2``).
- ``corner_logits`` ``(P, 4)`` (3x3 state kernels only): zeros, so every spatial eigenvalue is
  1 and a freshly initialised ConvT3 is exactly a ConvS5.
- MiniT3 (``shared_spatial``): ``corner_logits`` ``(1, 3)``, one spatial kernel shared by all P
  channels. The note's ablation (Hong et al. 2026, note 61369032831, "MiniT3 (+24 params):
  shared kernel slices, only 3 extra params per layer") counts 3: the four corners ``4 softmax``
  sum to 4, so the kernel has three degrees of freedom (``a = 1``; ``b``, ``c``, ``d``), and the
  fourth logit is pinned to 0 (`expand_corner_logits`).
"""

from __future__ import annotations

import numpy as np

from convt3.spectral import corners_to_coefficients, hippo_initializer, softmax_corners

DISCRETIZATIONS = ("zoh", "direct")
LAMBDA_PARAMS = ("softplus", "clip")


def inverse_softplus(y: np.ndarray) -> np.ndarray:
    """``x`` with ``softplus(x) = y`` (y > 0)."""
    return y + np.log(-np.expm1(-y))


def init_ssm_params(
    rng: np.random.Generator,
    features: int,
    state_size: int,
    kernel_b: int = 3,
    kernel_c: int = 3,
    blocks: int = 1,
    dt_min: float = 1e-3,
    dt_max: float = 1e-1,
    spatial: bool = True,
    lambda_param: str = "softplus",
    shared_spatial: bool = False,
) -> dict[str, np.ndarray]:
    """ConvS5's initialisation (HiPPO-N, log-uniform steps, He-normal kernels in the eigenbasis).

    `spatial` adds the corner logits (zeros): ``(P, 4)``, or ``(1, 3)`` with `shared_spatial`
    (MiniT3).
    """
    Lambda, V, V_inv = hippo_initializer(state_size, blocks)
    P = state_size // 2
    re = Lambda.real if lambda_param == "clip" else inverse_softplus(-Lambda.real)
    fan_b = features * kernel_b**2
    b = rng.standard_normal((state_size, fan_b)) * np.sqrt(2.0 / fan_b)  # He normal
    vb = (V_inv @ b).reshape(P, features, kernel_b, kernel_b)
    fan_c = state_size * kernel_c**2
    c = rng.standard_normal((features * kernel_c**2, state_size)) * np.sqrt(2.0 / fan_c)
    cv = (c @ V).reshape(features, kernel_c, kernel_c, P).transpose(0, 3, 1, 2)
    params = {
        "Lambda_re": np.asarray(re, np.float64),
        "Lambda_im": np.asarray(Lambda.imag, np.float64),
        "log_step": rng.uniform(np.log(dt_min), np.log(dt_max), P),
        "B": np.stack([vb.real, vb.imag], -1),
        "C": np.stack([cv.real, cv.imag], -1),
    }
    if spatial:
        params["corner_logits"] = np.zeros((1, 3) if shared_spatial else (P, 4))
    return params


def expand_corner_logits(logits: np.ndarray, P: int) -> np.ndarray:
    """Stored corner logits -> ``(P, 4)``: ``(P, 4)`` as is, MiniT3's shared ``(1, 3)`` as
    ``[l_1, l_2, l_3, 0]`` for every channel."""
    logits = np.asarray(logits)
    if logits.shape == (1, 3):
        return np.broadcast_to(np.append(logits[0], 0.0), (P, 4)).copy()
    if logits.shape == (P, 4):
        return logits
    raise ValueError(f"corner_logits: expected shape ({P}, 4) or (1, 3), got {logits.shape}")


def continuous_lambda(
    Lambda_re: np.ndarray, Lambda_im: np.ndarray, lambda_param: str
) -> np.ndarray:
    """Stored ``(Lambda_re, Lambda_im)`` -> continuous eigenvalues with negative real part."""
    if lambda_param == "softplus":
        return -np.logaddexp(0.0, Lambda_re) + 1j * Lambda_im
    if lambda_param == "clip":
        return np.minimum(Lambda_re, -1e-4) + 1j * Lambda_im
    raise ValueError(f"lambda_param: expected one of {LAMBDA_PARAMS}, got {lambda_param!r}")


def state_coefficients(corner_logits: np.ndarray, discretization: str) -> np.ndarray:
    """``(P, 4)`` corner logits -> ``(P, 4)`` spatial coefficients ``(a, b, c, d)``.

    ``"zoh"``: corners ``4 softmax(logits)`` (the paper: positive, so ``Lambda eps`` keeps a
    negative real part). ``"direct"``: the same corners divided by their largest, so they lie
    in ``(0, 1]`` and ``|exp(Lambda Delta) eps| < 1`` (a stable discrete 3x3 kernel).
    """
    corners = softmax_corners(corner_logits)
    if discretization == "direct":
        corners = corners / corners.max(-1, keepdims=True)
    elif discretization != "zoh":
        raise ValueError(
            f"discretization: expected one of {DISCRETIZATIONS}, got {discretization!r}"
        )
    return corners_to_coefficients(corners)


def reference_arguments(
    params: dict[str, np.ndarray], lambda_param: str, discretization: str
) -> dict[str, np.ndarray]:
    """The keyword arguments of `convt3.reference.convt3_sequential` for a stored parameter set."""
    P = params["Lambda_re"].shape[0]
    logits = expand_corner_logits(params.get("corner_logits", np.zeros((P, 4))), P)
    B, C = params["B"], params["C"]
    return {
        "Lambda": continuous_lambda(params["Lambda_re"], params["Lambda_im"], lambda_param),
        "step": np.exp(params["log_step"]),
        "coefficients": state_coefficients(logits, discretization),
        "B": B[..., 0] + 1j * B[..., 1],
        "C": C[..., 0] + 1j * C[..., 1],
    }
