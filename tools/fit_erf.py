#!/usr/bin/env python3
"""Fits erf(x) ~ x·P(x²)/Q(x²) on [0, T] (the kernels' erf, src/backends/cpu/kernels_impl.h).

Iteratively reweighted least squares on the linearised problem x·P(z) − erf(x)·(Q(z) − 1) = erf(x)
(z = x², Q(0) = 1), the weights growing where the error is largest, towards the minimax fit.
Prints the coefficients and the error when evaluated in float32 by Horner's rule, as the
kernels do. Needs numpy and scipy (tools/venv.sh).
"""
import argparse

import numpy as np
from scipy.special import erf


def fit(p_degree, q_degree, limit, iterations=60):
    x = np.unique(np.concatenate([np.linspace(0, limit, 20000),
                                  limit * np.cos(np.linspace(0, np.pi / 2, 4000))]))
    y, z = erf(x), x * x
    weights, q = np.ones_like(x), np.ones_like(x)
    for _ in range(iterations):
        a = np.concatenate([np.stack([x * z**k for k in range(p_degree + 1)], 1),
                            np.stack([-y * z**k for k in range(1, q_degree + 1)], 1)], 1)
        row_weights = np.sqrt(weights) / q
        c, *_ = np.linalg.lstsq(a * row_weights[:, None], y * row_weights, rcond=None)
        p, qc = c[:p_degree + 1], np.concatenate([[1.0], c[p_degree + 1:]])
        q = np.polyval(qc[::-1], z)
        err = np.abs(x * np.polyval(p[::-1], z) / q - y)
        weights = weights * (err / err.max() + 1e-3)
        weights /= weights.sum()
    return p, qc


def horner32(coefficients, z):
    acc = np.full_like(z, np.float32(coefficients[-1]))
    for c in coefficients[-2::-1]:
        acc = (acc * z + np.float32(c)).astype(np.float32)
    return acc


def erf32(p, q, x, clamp):
    """The kernels' evaluation: x clamped to ±clamp, the quotient clamped to ±1."""
    c = np.clip(x, -clamp, clamp).astype(np.float32)
    z = (c * c).astype(np.float32)
    return np.clip(c * horner32(p, z) / horner32(q, z), -1, 1).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p-degree", type=int, default=6)
    ap.add_argument("--q-degree", type=int, default=4)
    ap.add_argument("--limit", type=float, default=3.9, help="fit on [0, limit]")
    ap.add_argument("--clamp", type=float, default=4.1,
                    help="inputs clamped to ±clamp: the fit must exceed 1 there by far more than rounding")
    a = ap.parse_args()
    p, q = fit(a.p_degree, a.q_degree, a.limit)
    x = np.linspace(-8, 8, 800001).astype(np.float32)
    err = np.abs(erf32(p, q, x, np.float32(a.clamp)) - erf(x.astype(np.float64))).max()
    c = a.clamp
    over = c * np.polyval(p[::-1], c * c) / np.polyval(q[::-1], c * c) - 1
    print("P (z^0 first):", ", ".join(f"{v:.8e}" for v in p))
    print("Q (z^0 first):", ", ".join(f"{v:.8e}" for v in q))
    print(f"max |error| in float32 on [-8, 8]: {err:.2e}; the fit at the clamp is 1 + {over:.2e}")


if __name__ == "__main__":
    main()
