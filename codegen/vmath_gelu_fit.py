#!/usr/bin/env python3
"""vmath_gelu_fit.py - the coefficients of the float fast path of te_vgelu_fast
(codegen/vmath.c), reproducibly.  Needs numpy and mpmath (Debian:
python3-numpy python3-mpmath); not used by the build.

Q(a) = Phi(-a) = erfc(a/sqrt2)/2 for a = |x| in [0, 6], on 32 intervals of
width 3/16: on interval k, a degree-7 polynomial in d = a - m_k, m_k the
interval's middle (k + 1/2) * 3/16, fitted for relative error by iteratively
reweighted least squares on Chebyshev nodes (a Remez-like minimax), on the
interval widened by 0.004 each side (the lane's interval index comes from a
rounded product).  The constant term is Q(m_k) as a float plus a float
correction (c0hi + c0lo); the others are rounded to float one at a time,
lowest degree first, the higher ones refitted to what each rounding left
(c1's rounding alone would cost 3e-8), and the error is checked with the
rounded coefficients, in 40-digit arithmetic.  With the middle as
the origin, |d * P(d)| stays below about 0.6 Q(m_k), so the float Horner
steps round a term smaller than the result.

Prints the table as C string lines for vmath.c and the errors (stderr).
"""
import re
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 40
WIDTH, INTERVALS, DEGREE = 3 / 16, 32, 7


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


def q_exact(a):
    """Phi(-a) = erfc(a/sqrt2)/2, in 40 digits"""
    return mp.erfc(mp.mpf(a) / mp.sqrt(2)) / 2


def fit_gelu():
    rows, worst = [], 0.0
    lo, hi = -WIDTH / 2 - 0.004, WIDTH / 2 + 0.004
    nodes = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (np.arange(300) + 0.5) / 300)
    for k in range(INTERVALS):
        mid = (k + 0.5) * WIDTH
        exact = [q_exact(mid + float(d)) for d in nodes]
        q0 = q_exact(mid)
        c0hi = np.float32(float(q0))
        c0lo = np.float32(float(q0 - mp.mpf(float(c0hi))))
        rest = np.array([float(e - mp.mpf(float(c0hi)) - mp.mpf(float(c0lo))) for e in exact])
        # one coefficient at a time, lowest degree first: rounded to float,
        # then the higher ones refitted to what its rounding left
        weight = 1 / np.array([float(e) for e in exact])
        coef = []
        for i in range(1, DEGREE + 1):
            basis = np.vstack([nodes ** j for j in range(i, DEGREE + 1)]).T
            ci = np.float32(minimax(basis, rest, weight)[0])
            coef.append(ci)
            rest = rest - float(ci) * nodes ** i
        err = 0.0
        for d in np.linspace(lo, hi, 3000):
            dm = mp.mpf(float(d))
            p = mp.mpf(0)
            for x in reversed(coef):
                p = p * dm + mp.mpf(float(x))
            p = mp.mpf(float(c0hi)) + mp.mpf(float(c0lo)) + p * dm
            err = max(err, abs(float(p / q_exact(mid + float(d)) - 1)))
        print("interval %2d: relative error %.3g" % (k, err), file=sys.stderr)
        worst = max(worst, err)
        rows.append({"c0hi": c0hi, "c0lo": c0lo, **{"c%d" % (i + 1): x for i, x in enumerate(coef)}})
    print("Q: max relative error %.3g" % worst, file=sys.stderr)
    names = ["c%d" % i for i in range(DEGREE, 0, -1)] + ["c0lo", "c0hi"]
    for name in names:
        v = [hexf(r[name]) for r in rows]
        for half in range(2):
            w = v[16 * half:16 * half + 16]
            print('    "    { ' + ", ".join(w[:8]) + ',\\n"')
            print('    "      ' + ", ".join(w[8:]) + " },  /* %s, intervals %d-%d */\\n\"" %
                  (name, 16 * half, 16 * half + 15))

if __name__ == "__main__":
    fit_gelu()
