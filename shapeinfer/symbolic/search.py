"""Counterexamples: a binding of the symbols, from a fixed and deterministic set of probes, under
which a condition between dims fails -- what ``check`` reports as "it fails for seq=3"."""

from __future__ import annotations

import random
from typing import Optional

from .expr import Binding, EvaluationError, Sym, atoms, evaluate, free_symbols

PROBES = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 31, 32, 33, 63, 64, 65, 100, 127, 128, 224, 255, 256,
          257, 384, 511, 512, 1000, 1023, 1024, 4096)


def holds(kind, a, b):
    """A test of a binding: a == b ("equal"), a and b broadcast together ("broadcast"), a <= b
    ("le"), or a is a multiple of b (otherwise)."""
    if kind == "broadcast":
        return broadcasts((a, b))

    def equal(binding):
        return evaluate(a, binding) == evaluate(b, binding)

    def at_most(binding):
        return evaluate(a, binding) <= evaluate(b, binding)

    if kind == "le":
        return at_most

    def multiple(binding):
        x, y = evaluate(a, binding), evaluate(b, binding)
        if y == 0:
            raise ZeroDivisionError  # a -1 beside a zero dim: another rule, not this binding
        return x % y == 0

    return equal if kind == "equal" else multiple


def broadcasts(args):
    """A test of a binding: the dims broadcast together (all equal but for 1s)."""
    def holds(binding):
        return len({evaluate(x, binding) for x in args} - {1}) <= 1

    return holds


def counterexample(dims, holds, nonempty=(), extra=None) -> Optional[dict]:
    """A binding of the symbols (within their bounds) for which holds() is False, or None when
    none of a fixed, deterministic set of probes breaks it. ``nonempty``: dims that must stay
    at least 1 (the tensor dims, under assume_nonempty) -- bindings that break them are out.
    ``extra``: {symbol: sizes} tried first for those symbols (the sizes a user runs at)."""
    lows = _lows(dims)
    names = sorted(lows)
    rng = random.Random(len(names))
    tries = []
    if extra:
        pools = {n: tuple(extra.get(n, ())) or PROBES for n in names}
        tries += [{n: pools[n][k % len(pools[n])] for n in names} for k in range(max(len(p) for p in pools.values()))]
        tries += [{n: rng.choice(pools[n]) for n in names} for _ in range(300 if len(names) > 1 else 0)]
    tries += [{n: v for n in names} for v in PROBES]
    tries += [{n: rng.choice(PROBES) for n in names} for _ in range(300 if len(names) > 1 else 0)]
    for binding in tries:
        if any(binding[n] < lows[n] for n in names):
            continue
        try:
            if not holds(binding) and _allowed(binding, nonempty):
                return binding
        except (EvaluationError, ZeroDivisionError, ArithmeticError):
            continue
    return None


def _lows(dims) -> dict:
    """{symbol: its lower bound} for the symbols of dims."""
    lows: dict = {}
    for d in dims:
        for atom in atoms(d):
            if isinstance(atom, Sym):
                lows[atom.name] = max(lows.get(atom.name, 0), atom.lo)
    return lows


VARIED = (0, 1, 2, 3, 7, 16, 64, 255, 1000)  # the values a symbol takes to see whether it matters
WIDE = 512  # ... and every size to this, where the binding has few symbols


def relevant(dims, binding: dict, holds, nonempty=()) -> dict:
    """The part of a failing ``binding`` that makes it fail: a symbol is left out when holds()
    still fails whatever value it takes (each of VARIED within its bound, the others as they
    are, and a few joint variations of every symbol left out). "fails for height=12, width=12"
    instead of "batch=12, height=12, width=12" where batch plays no part."""
    lows = _lows(dims)

    def fails(trial) -> bool:
        if any(trial[n] < lows.get(n, 0) for n in trial) or not _allowed(trial, nonempty):
            return True  # outside the symbols' bounds: says nothing either way
        try:
            return not holds(Binding(trial))
        except (EvaluationError, ZeroDivisionError, ArithmeticError):
            return True

    binding = dict(binding)
    for n in sorted(binding):  # each at the smallest value that still fails (1024 -> 1)
        binding[n] = next((v for v in VARIED if v < binding[n] and v >= lows.get(n, 0)
                           and fails({**binding, n: v}) and _fails_outright(holds, {**binding, n: v})), binding[n])
    # (each size to 512 too: a symbol that matters only at a size VARIED skips, 300 against a
    # patch count of 300, is kept)
    wide = VARIED + tuple(range(1, WIDE + 1)) if len(binding) <= 3 else VARIED
    dropped = [n for n in sorted(binding) if all(fails({**binding, n: v}) for v in wide)]
    if not dropped:
        return binding
    rng = random.Random(len(dropped))
    if not all(fails({**binding, **{n: rng.choice(VARIED) for n in dropped}}) for _ in range(16)):
        return binding
    kept = {n: v for n, v in binding.items() if n not in dropped}
    # Probing proves nothing: with every symbol dropped the message would say "every size",
    # which a size no probe tried may belong to (seq=5 of a Reshape that bakes it in). The
    # failing sizes themselves are said instead.
    return kept if kept else binding


def _fails_outright(holds, binding) -> bool:
    """holds() is False at binding (not merely undefined there)."""
    try:
        return not holds(binding)
    except (EvaluationError, ZeroDivisionError, ArithmeticError):
        return False


def _allowed(binding, nonempty) -> bool:
    """False when the binding makes some tensor empty (under assume_nonempty). A dim that has
    no value there -- it sits after a broadcast that fails at that binding -- says nothing: the
    run stops before that tensor exists."""
    for d in nonempty:
        if free_symbols(d) <= binding.keys():
            try:
                if evaluate(d, binding) < 1:
                    return False
            except (EvaluationError, ArithmeticError):
                continue
    return True


def binding_str(binding: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in binding.items()) or "every size"
