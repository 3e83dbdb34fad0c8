"""Run many seeds, each in a forked child (a hang, a crash of the runtime or a huge allocation
stays there), shrink failures, print a summary.

    python -m tests.adversarial.harness 0:200            # seeds 0..199
    python -m tests.adversarial.harness 17 --shrink      # one seed, shrink its failures
    SHAPEINFER_ADVERSARIAL=20000 python -m pytest tests/test_adversarial.py -s   # the long run

Repro models of failures are written to $SHAPEINFER_ADVERSARIAL_OUT (default
/tmp/shapeinfer-adversarial) as ``<class>-seed<seed>.onnx`` (shrunk when shrinking ran).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import resource
import time
import traceback
from collections import Counter, defaultdict

import numpy as np

from . import gen as _gen  # noqa: F401  (imported once here, not in every child)
from .runner import Failure, Judge, Outcome

# raise mode (shapeinfer/errors.py): a bug reaches the judge as a crash, never as an exit code
# or an internal-error finding -- run from the shell as in the test run
os.environ.setdefault("SHAPEINFER_RAISE", "1")

GRAPH_SECONDS = 120.0  # hard limit for one seed (all commands and runs), killed past it
MEMORY_BYTES = 16 * 2**30
OUT_DIR = os.environ.get("SHAPEINFER_ADVERSARIAL_OUT", "/tmp/shapeinfer-adversarial")


def judge_seed(seed: int, progress=None) -> Outcome:
    from .gen import generate

    case = generate(seed)
    j = Judge(case.model, case.symbols, case.bindings, case.feeds, seed=seed, progress=progress,
              skipped=case.skipped_bindings)
    out = j.run()
    out.notes = list(case.notes)
    return out


def _child(fn, args, conn):
    import warnings

    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    try:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    except (ValueError, OSError):
        pass

    def progress(phase):
        conn.send(("phase", phase))
    try:
        out = fn(*args, progress=progress)
        conn.send(("done", out))
    except MemoryError:
        conn.send(("error", "MemoryError (over the child's 16 GiB limit) in phase"))
    except BaseException as e:  # noqa: BLE001 - reported to the parent as a failure of the harness
        conn.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}"))
    finally:
        conn.close()


def isolated(fn, args, seconds=GRAPH_SECONDS, seed=None, model_bytes=b"") -> Outcome:
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(fn, args, send))
    p.start()
    send.close()
    phase, result, deadline = "start", None, time.monotonic() + seconds
    closed = False  # the child closed its end of the pipe (it is exiting)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        if recv.poll(min(left, 1.0)):
            try:
                kind, payload = recv.recv()
            except EOFError:
                closed = True
                break
            if kind == "phase":
                phase = payload
            else:
                result = (kind, payload)
                break
        elif not p.is_alive():
            break
    if result is None and closed:
        p.join(5)  # a child that closed its end is exiting: let it (one past its time is killed now)
    if result is None and p.is_alive():
        p.kill()
        p.join()
        out = Outcome(seed=seed, built=1)
        out.failures.append(Failure("hang", f"no answer in {seconds:.0f} s (last phase: {phase})", model_bytes, seed))
        return out
    p.join()
    if result is None:
        out = Outcome(seed=seed, built=1)
        cls = "runtime-crash" if phase.startswith(("runtime", "optimized")) else "process-died"
        out.failures.append(Failure(cls, f"the process died (exit code {p.exitcode}) in phase {phase!r}", model_bytes, seed))
        return out
    kind, payload = result
    if kind == "error":
        out = Outcome(seed=seed, built=1)
        out.failures.append(Failure("harness-error", f"in phase {phase!r}: {payload}", model_bytes, seed))
        return out
    return payload


def model_of(seed) -> bytes:
    from .gen import generate

    try:
        return generate(seed).model.SerializeToString()
    except Exception:  # noqa: BLE001
        return b""


def run_seeds(seeds, shrink=False, log=print, shrink_budget=60.0) -> Outcome:
    total = Outcome()
    total.built = 0
    t0 = time.perf_counter()
    by_class: dict = defaultdict(list)
    for k, seed in enumerate(seeds):
        out = isolated(judge_seed, (seed,), seed=seed)
        for f in out.failures:
            if not f.model:
                f.model = model_of(seed)
        total.merge(out)
        for f in out.failures:
            by_class[f.cls].append(f)
        if log and (k + 1) % 200 == 0:
            log(f"  ... {k + 1} graphs, {len(total.failures)} failures, {time.perf_counter() - t0:.0f} s")
    total.seconds = time.perf_counter() - t0
    if shrink:
        from .shrink import shrink_failure

        done = set()
        for f in total.failures:
            key = (f.cls, _signature(f))
            if key in done:
                continue
            done.add(key)
            f.shrunk = shrink_failure(f, budget=shrink_budget)
    return total


def _signature(f: Failure) -> str:
    """A rough root-cause key: the message without names, numbers and the optimize variant."""
    import re

    msg = re.sub(r"optimize\([^)]*\)", "optimize(*)", f.message)
    msg = re.sub(r"infer\(assume_nonempty\)", "infer", msg)
    msg = re.sub(r"'[^']*'", "'…'", msg)
    msg = re.sub(r"\b[A-Za-z_]+\d+\b", "t", msg)
    msg = re.sub(r"-?\d+(\.\d+)?", "n", msg)
    msg = re.sub(r"\[[^\]]*\]", "[…]", msg)
    return msg[:100]


def save_failures(total: Outcome, out_dir=OUT_DIR) -> list:
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    seen = set()
    for f in total.failures:
        key = (f.cls, f.seed)
        if key in seen:
            continue
        seen.add(key)
        path = os.path.join(out_dir, f"{f.cls}-seed{f.seed}.onnx")
        with open(path, "wb") as fh:
            fh.write(f.shrunk or f.model)
        paths.append(path)
    return paths


def summary(total: Outcome, examples=True, max_lines=60) -> str:
    lines = [f"graphs built {total.built}, graphs run {total.ran} (bindings run {total.bindings_run}), "
             f"tensors compared {total.tensors_compared} ({total.dims_compared} dims, {total.values_compared} "
             f"value elements), optimised models compared {total.optimized_compared} (variant x binding), "
             f"{total.seconds:.0f} s"]
    classes = Counter(f.cls for f in total.failures)
    seeds = defaultdict(set)
    groups: dict = defaultdict(list)
    for f in total.failures:
        seeds[f.cls].add(f.seed)
        groups[(f.cls, _signature(f))].append(f)
    lines.append("failures by class: " + (", ".join(f"{c}: {n} ({len(seeds[c])} graphs)" for c, n in classes.most_common()) or "none"))
    for (cls, sig), fs in sorted(groups.items(), key=lambda kv: (-len({f.seed for f in kv[1]}), kv[0])):
        graphs = sorted({f.seed for f in fs}, key=lambda s: (s is None, s))
        lines.append(f"  {cls:22s} {len(graphs):4d} graphs (seeds {', '.join(map(str, graphs[:6]))}{'...' if len(graphs) > 6 else ''}): {fs[0].message[:160]}")
    if total.deviations:
        lines.append("runtime deviations from the spec (tainted, see deviations.py): " +
                     ", ".join(f"{k}: {v}" for k, v in total.deviations.most_common()))
    for u in total.unlisted[:10]:
        lines.append("  unlisted: " + u)
    if examples:
        shown = Counter()
        for (cls, sig), fs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            if shown[cls] >= 3:
                continue
            shown[cls] += 1
            f = next((g for g in fs if g.shrunk), fs[0])
            text = f.report().splitlines()
            if len(text) > max_lines:
                text = text[:max_lines] + [f"... ({len(text) - max_lines} more lines; the model is saved)"]
            lines.append("")
            lines.extend(text)
    return "\n".join(lines)


def triage(seeds, budget=60.0, per_group=1):
    """Run the seeds, then shrink the first failure of each (class, signature) group."""
    from .shrink import shrink_failure

    total = run_seeds(seeds)
    groups: dict = defaultdict(list)
    for f in total.failures:
        groups[(f.cls, _signature(f))].append(f)
    for key, fs in groups.items():
        for f in fs[:per_group]:
            f.shrunk = shrink_failure(f, budget=budget)
    return total


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("seeds", help="N, A:B or a comma list")
    ap.add_argument("--shrink", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--triage", action="store_true", help="shrink one failure of every group")
    a = ap.parse_args(argv)
    if ":" in a.seeds:
        lo, hi = a.seeds.split(":")
        seeds = range(int(lo), int(hi))
    elif "," in a.seeds:
        seeds = [int(s) for s in a.seeds.split(",")]
    else:
        seeds = [int(a.seeds)]
    total = triage(seeds) if a.triage else run_seeds(seeds, shrink=a.shrink)
    print(summary(total, examples=not a.quiet))
    paths = save_failures(total)
    if paths:
        print(f"\n{len(paths)} repro models in {OUT_DIR}")


if __name__ == "__main__":
    main()
