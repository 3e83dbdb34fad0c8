"""Seeded value generators for the folding tests: the edges of every element type.

Floats: +/-0, +/-inf, quiet and signalling NaNs (both signs, with payloads), the smallest and
largest subnormals, the smallest normal, the largest finite value, ties for rounding (0.5,
1.5, 2.5, -2.5), small integers, and random bit patterns. Integers: INT_MIN, INT_MAX, -1, 0,
1, values near the ends, and random ones.
"""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)

# (exponent bits, mantissa bits) of the IEEE-like formats with NaN and infinities
LAYOUT = {F16: (5, 10), BF16: (8, 7), F32: (8, 23), F64: (11, 52)}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

INT_TYPES = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)]
FLOAT_TYPES = [F16, BF16, F32, F64]


def from_bits(bits, dt) -> np.ndarray:
    return np.array(bits, dtype=_UINT[dt.itemsize]).view(dt)


def float_specials(dt, nan=True) -> np.ndarray:
    """The edge values of an IEEE float type (NaNs only if nan)."""
    e, m = LAYOUT[dt]
    sign = 1 << (e + m)
    exp = ((1 << e) - 1) << m
    quiet = 1 << (m - 1)
    finite = [0, 1, (1 << m) - 1, 1 << m, exp - 1]  # 0, min/max subnormal, min normal, max finite
    bits = finite + [b | sign for b in finite] + [exp, exp | sign]
    if nan:
        bits += [exp | quiet, exp | quiet | sign, exp | quiet | 0x5, exp | 1, exp | (quiet >> 1),
                 exp | 1 | sign]  # qNaN, -qNaN, payload, sNaN, sNaN, -sNaN
    out = list(from_bits(bits, dt))
    out += list(np.array([1, -1, 0.5, -0.5, 1.5, 2.5, -2.5, 3, 0.25, 7, -8, 100], dtype=F32).astype(dt))
    return np.array(out, dtype=dt)


def float_pool(dt, rng, size, nan=True) -> np.ndarray:
    """size values of dt: edges, small numbers and random bit patterns (NaNs only if nan)."""
    specials = float_specials(dt, nan)
    e, m = LAYOUT[dt]
    ut = np.dtype(_UINT[dt.itemsize])
    randbits = rng.integers(0, np.iinfo(ut).max, size=size, dtype=ut, endpoint=True).view(dt)
    small = (rng.integers(-40, 41, size=size) / rng.choice([1, 2, 4, 3], size=size)).astype(F32).astype(dt)
    choice = rng.integers(0, 3, size=size)
    out = np.where(choice == 0, specials[rng.integers(0, len(specials), size=size)],
                   np.where(choice == 1, small, randbits)).astype(dt)
    if not nan:
        wide = out.astype(F64) if dt != F64 else out
        out = np.where(np.isnan(wide), np.array(1.0, F32).astype(dt), out).astype(dt)
    return out


def int_pool(dt, rng, size) -> np.ndarray:
    info = np.iinfo(dt)
    edges = [info.min, info.max, 0, 1, 2, 3, 7, info.max - 1, info.min + 1]
    if info.min < 0:
        edges += [-1, -2, -7]
    edges = np.array(edges, dtype=object)
    rand = rng.integers(info.min, info.max, size=size, dtype=dt, endpoint=True)
    small = rng.integers(-9 if info.min < 0 else 0, 10, size=size)
    choice = rng.integers(0, 3, size=size)
    values = [int(edges[rng.integers(0, len(edges))]) if c == 0 else int(small[i]) if c == 1 else int(rand[i])
              for i, c in enumerate(choice)]
    return np.array(values, dtype=object).astype(dt)


def round_to(value: Fraction, mbits: int, emin: int, emax: int) -> float:
    """value rounded once, to nearest even, to a binary format with mbits fraction bits,
    normal exponents [emin, emax] and subnormals; +/-inf beyond. (The oracle for types
    onnxruntime has no kernel for.)"""
    if value == 0:
        return 0.0
    sign = -1 if value < 0 else 1
    v = abs(value)
    e = v.numerator.bit_length() - v.denominator.bit_length()
    while Fraction(2) ** e > v:
        e -= 1
    while Fraction(2) ** (e + 1) <= v:
        e += 1
    e = max(e, emin)
    quantum = Fraction(2) ** (e - mbits)
    n = v / quantum
    q = int(n)
    rest = n - q
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and q % 2):
        q += 1
    result = q * quantum
    largest = (2 - Fraction(2) ** -mbits) * Fraction(2) ** emax
    if result > largest:
        return sign * float("inf")
    return sign * float(result)


BF16_FORMAT = (7, -126, 127)
