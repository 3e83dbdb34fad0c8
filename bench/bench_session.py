"""onnxruntime's session creation before and after `shapeinfer optimize` (median of 3 each):
`python bench/bench_session.py`. The Llama-shaped 32-layer graph comes from bench/models.py; the
others are fixture exports."""

from __future__ import annotations

import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402

import shapeinfer  # noqa: E402
from models import llama_layers  # noqa: E402

FIXTURES = ("t5_classic", "swin_classic", "gpt2_classic", "llama_classic")


def session_seconds(model, repeat: int = 3) -> float:
    blob = model.SerializeToString()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        ort.InferenceSession(blob, providers=["CPUExecutionProvider"])
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    models = {"llama_32": llama_layers(32)}
    for name in FIXTURES:
        models[name] = onnx.load(os.path.join(HERE, "..", "fixtures", "corpus", name + ".onnx"))
    print(f"{'model':14s} {'nodes':>15s} {'optimize':>9s} {'session before':>15s} {'after':>7s}")
    for name, model in models.items():
        t = time.perf_counter()
        out = shapeinfer.optimize(model)
        took = time.perf_counter() - t
        print(f"{name:14s} {len(model.graph.node):>6d} -> {len(out.graph.node):<6d} {took:>8.2f}s "
              f"{session_seconds(model):>14.2f}s {session_seconds(out):>6.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
