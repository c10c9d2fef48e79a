#!/usr/bin/env python3
"""vmath_gelu_fit.py - the coefficients of the float fast path of te_vgelu_fast
(codegen/vmath.c), reproducibly.  Needs numpy and mpmath (Debian:
python3-numpy python3-mpmath); not used by the build.

G(u) = erfcx(u/sqrt2) on 16 intervals [0.375k, 0.375(k+1)] of |x|: on each, a
degree-6 polynomial in d = |x| - 0.375k, fitted for relative error by
iteratively reweighted least squares on Chebyshev nodes (a Remez-like
minimax), on the interval widened by 0.004 each side (the lane's interval
index comes from a rounded product).  The constant term is G(0.375k) as a
float plus a float correction (c0hi + c0lo); the other coefficients are
rounded to float and the error is checked with them, in 40-digit arithmetic.
Then e^r - 1 = r + r^2 P(r) on |r| <= 0.35 (the reduced argument of exp),
P of degree 4, fitted the same way.

Prints the table as C string lines for vmath.c and the errors (stderr).
"""
import re
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 40
WIDTH, INTERVALS, DEGREE = 0.375, 16, 6


def hexf(v):
    """v (a float32 value) as a C hex float literal"""
    if v == 0:
        return "0.0f"
    m = re.match(r"(-?0x1)\.?([0-9a-f]*)p([+-]\d+)", float(v).hex())
    mant = m.group(2).rstrip("0")
    return m.group(1) + ("." + mant if mant else "") + "p" + m.group(3) + "f"


def minimax(basis, target, weight, n_iter=40):
    """coefficients c minimizing max |weight * (basis @ c - target)|, roughly"""
    w = np.ones(len(target))
    for _ in range(n_iter):
        c, *_ = np.linalg.lstsq(basis * (w * weight)[:, None], target * w * weight, rcond=None)
        r = np.abs((basis @ c - target) * weight)
        w = w * (r / r.max() + 1e-2) ** 0.5
        w /= w.max()
    return c


def erfcx_scaled(u):
    a = mp.mpf(u) / mp.sqrt(2)
    return mp.exp(a * a) * mp.erfc(a)


def fit_gelu():
    rows, worst = [], 0.0
    lo, hi = -0.004, WIDTH + 0.004
    nodes = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (np.arange(300) + 0.5) / 300)
    for k in range(INTERVALS):
        exact = [erfcx_scaled(k * WIDTH + float(d)) for d in nodes]
        g0 = erfcx_scaled(k * WIDTH)
        c0hi = np.float32(float(g0))
        c0lo = np.float32(float(g0 - mp.mpf(float(c0hi))))
        rest = np.array([float(e - mp.mpf(float(c0hi)) - mp.mpf(float(c0lo))) for e in exact])
        basis = np.vstack([nodes ** i for i in range(1, DEGREE + 1)]).T
        c = minimax(basis, rest, 1 / np.array([float(e) for e in exact]))
        coef = [np.float32(x) for x in c]
        err = 0.0
        for d in np.linspace(lo, hi, 3000):
            dm = mp.mpf(float(d))
            p = mp.mpf(0)
            for x in reversed(coef):
                p = p * dm + mp.mpf(float(x))
            p = mp.mpf(float(c0hi)) + mp.mpf(float(c0lo)) + p * dm
            err = max(err, abs(float(p / erfcx_scaled(k * WIDTH + float(d)) - 1)))
        print("interval %2d: relative error %.3g" % (k, err), file=sys.stderr)
        worst = max(worst, err)
        rows.append({"c0hi": c0hi, "c0lo": c0lo, **{"c%d" % (i + 1): x for i, x in enumerate(coef)}})
    print("G: max relative error %.3g" % worst, file=sys.stderr)
    for name in ["c6", "c5", "c4", "c3", "c2", "c1", "c0lo", "c0hi"]:
        v = [hexf(r[name]) for r in rows]
        print('    "    { ' + ", ".join(v[:8]) + ',\\n"')
        print('    "      ' + ", ".join(v[8:]) + " },  /* %s */\\n\"" % name)


def fit_expm1():
    r = 0.35 * np.cos(np.pi * (np.arange(400) + 0.5) / 400)
    rm = [mp.mpf(float(x)) for x in r]
    target = np.array([float((mp.expm1(x) - x) / x ** 2) for x in rm])
    weight = np.array([float(x ** 2 / mp.exp(x)) for x in rm])
    c = minimax(np.vstack([r ** i for i in range(5)]).T, target, weight)
    coef = [np.float32(x) for x in c]
    err = 0.0
    for x in np.linspace(-0.35, 0.35, 5001):
        xm = mp.mpf(float(x))
        p = mp.mpf(0)
        for ci in reversed(coef):
            p = p * xm + mp.mpf(float(ci))
        err = max(err, abs(float((1 + xm + xm ** 2 * p) / mp.exp(xm) - 1)))
    print("exp: max relative error of 1 + r + r^2 P(r): %.3g" % err, file=sys.stderr)
    print("P, highest degree first:", ", ".join(hexf(x) for x in reversed(coef)))


if __name__ == "__main__":
    fit_gelu()
    fit_expm1()
