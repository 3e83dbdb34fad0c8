"""Declared names are kept and related to what was inferred; results do not depend on
PYTHONHASHSEED.

The hash-seed test infers a set of models in child processes, one per PYTHONHASHSEED, and
requires every annotated model to be byte-identical across them. By default the set is chosen
to exercise set and dict iteration order: every corpus export and the fixture (many nodes, two
or three input symbols; strict inference mints symbols where it cannot express a dim), the
backend node cases with the most input and minted symbols and with subgraphs, and generated
graphs with model-local functions and with If/Loop/Scan bodies -- each inferred strict and
with ``assume_nonempty``, under four hash seeds. ``SHAPEINFER_FULL=1`` widens it to every
backend case holding Expand/Reshape/Tile (static and symbolic inputs), every generated graph
of seeds 0-499 that infers, and eight hash seeds:

    SHAPEINFER_FULL=1 python -m pytest tests/test_names_determinism.py
"""

import json
import os
import subprocess
import sys

import numpy as np
import onnx

import shapeinfer
from tests.helpers import single_node_model

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
FULL = os.environ.get("SHAPEINFER_FULL", "") not in ("", "0")


def test_declared_size_that_contradicts_inference_is_a_conflict():
    model = single_node_model("Reshape", 14, ["N", 6], [np.array([-1, 3], dtype=np.int64)])
    out = model.graph.output[0]
    out.type.tensor_type.shape.dim.add().dim_param = "rows"
    out.type.tensor_type.shape.dim.add().dim_value = 4  # wrong: the Reshape makes it 3
    result = shapeinfer.infer(model)
    kinds = {d["axis"]: d for d in result.declared_dims()}
    assert kinds[0]["kind"] == "equal" and kinds[0]["declared"] == "rows" and kinds[0]["inferred"] == "2*N"
    assert kinds[1]["kind"] == "conflict" and kinds[1]["inferred"] == "3"


HASH_SEEDS = ("0", "1", "12345", "random") + (("2", "3", "4294967295", "random") if FULL else ())

# Backend node cases (symbolic inputs), chosen for what makes iteration order matter: the
# linear-attention expansions have a Loop body, 12-15 input symbols and as many minted ones;
# affine_grid has ten If bodies; the attention expansion with past and present has 19 symbols.
BACKEND_CASES = (
    "test_linear_attention_gated_per_head_decay_expanded",
    "test_linear_attention_gated_delta_mqa_expanded",
    "test_affine_grid_3d_expanded",
    "test_attention_3d_with_past_and_present_qk_matmul_softcap_expanded",
)
GENERATED_EACH = 4  # generated graphs with functions, and as many with subgraphs
GENERATED_SEEDS = range(500 if FULL else 300)


def _subgraphs(graph):
    return sum(1 + _subgraphs(a.g) if a.HasField("g") else sum(1 + _subgraphs(g) for g in a.graphs)
               for n in graph.node for a in n.attribute)


def _infers(model):
    try:
        shapeinfer.infer(model)
    except Exception:  # noqa: BLE001 - only models that infer are compared
        return False
    return True


def _models():
    """(label, model) of every model the children infer."""
    import glob

    from tests import conformance
    from tests.adversarial.gen import generate

    files = sorted(glob.glob(os.path.join(ROOT, "fixtures", "corpus", "*.onnx")))
    files.append(os.path.join(ROOT, "fixtures", "tiny_bert.onnx"))
    assert len(files) >= 13, files
    for f in files:
        yield os.path.basename(f), onnx.load(f)
    found = set()
    modes = ("static", "symbolic") if FULL else ("symbolic",)
    for k, (name, model, inputs, _) in enumerate(conformance.cases()):
        if FULL or name in BACKEND_CASES:
            found.add(name)
            for mode in modes:
                yield f"{name}[{k}]-{mode}", conformance._prepare(model, inputs, mode)[0]
    assert not set(BACKEND_CASES) - found, f"backend cases missing from this onnx: {set(BACKEND_CASES) - found}"
    with_functions, with_subgraphs = 0, 0
    for seed in GENERATED_SEEDS:
        model = generate(seed).model
        functions, subgraphs = bool(model.functions), _subgraphs(model.graph) > 0
        take = FULL or (functions and with_functions < GENERATED_EACH) or (subgraphs and with_subgraphs < GENERATED_EACH)
        if take and _infers(model):
            with_functions += functions
            with_subgraphs += subgraphs
            yield f"generated-seed{seed}", model
        if not FULL and with_functions >= GENERATED_EACH and with_subgraphs >= GENERATED_EACH:
            break
    assert with_functions >= GENERATED_EACH and with_subgraphs >= GENERATED_EACH, (with_functions, with_subgraphs)


CHILD = """
import hashlib, json, sys
import onnx, shapeinfer
digests = {}
for label, path in json.load(open(sys.argv[1])):
    m = onnx.load(path)
    for a in (False, True):
        try:
            data = shapeinfer.infer_shapes(m, assume_nonempty=a).SerializeToString()
        except Exception as e:  # a different error under another seed is a difference too
            data = f"raised {type(e).__name__}: {e}".encode()
        digests[f"{label} assume_nonempty={a}"] = hashlib.sha256(data).hexdigest()
print(json.dumps(digests))
"""


def test_annotated_models_are_identical_under_any_hash_seed(tmp_path):
    """Every model's annotated bytes (strict and assume_nonempty) are the same under every
    PYTHONHASHSEED. The model set is in the module docstring; SHAPEINFER_FULL=1 for the full one."""
    manifest = []
    for k, (label, model) in enumerate(_models()):
        path = str(tmp_path / f"{k}.onnx")
        onnx.save(model, path)
        manifest.append((label, path))
    (tmp_path / "models.json").write_text(json.dumps(manifest))
    runs = {}
    for seed in HASH_SEEDS:
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "models.json")], cwd=str(tmp_path),
                             capture_output=True, text=True, env=env, timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        runs[seed] = json.loads(out.stdout.strip().splitlines()[-1])
        assert len(runs[seed]) == 2 * len(manifest), "every model, strict and assume_nonempty"
    first = runs[HASH_SEEDS[0]]
    differ = sorted({label for digests in runs.values() for label in first if digests[label] != first[label]})
    assert not differ, f"annotated models differ across PYTHONHASHSEED {HASH_SEEDS}: {differ[:20]}"
