"""onnx's backend node cases holding Expand/Reshape/Tile: no wrong shape, no crash, and the
number of exactly recovered outputs may not fall. Figures: ``python tests/conformance.py``.
And every other backend node case: no wrong static dim, none refused."""

import pytest

from tests import conformance

# Floors: what the engine reaches today (onnx 1.23: 226 cases, 393 outputs). Raise them as it
# improves; the test fails if a change makes any output wrong or lowers the exact count.
EXACT_FLOOR = {"static": 375, "symbolic": 375, "symbolic-nonempty": 375}

# (symbolic: every input dim a symbol, 0 allowed -- as many exact as static: the zero cases
# are expressed, not given up)


@pytest.mark.parametrize("mode", conformance.MODES)
def test_backend_cases(mode):
    counts, details = conformance.run(mode)
    wrong = [d for d in details if d[2] == "wrong"]
    assert not wrong, "wrong shapes or crashes:\n" + "\n".join(map(str, wrong[:20]))
    assert sum(counts.values()) >= 380, "the backend cases were not all collected"
    assert counts["exact"] >= EXACT_FLOOR[mode], dict(counts)



def _onnxruntime_refuses(model) -> bool:
    """Whether onnxruntime refuses the model at load for a reason of the model's own (not for want
    of a kernel)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 4
    try:
        ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - onnxruntime's refusal
        return "NOT_IMPLEMENTED" not in str(e) and "Exception during initialization" not in str(e)
    return False


@pytest.mark.parametrize("dims, constants", [("static", "none"), ("symbolic", "none"), ("symbolic", "small-ints")],
                         ids=["static", "symbolic", "symbolic-small-ints-constant"])
def test_every_backend_node_case_gets_no_wrong_dim(dims, constants):
    """Every node case onnx ships (not only those with Expand/Reshape/Tile), value_info and the
    outputs' declared shapes erased, each input given its real shape (``static``) or a symbol
    per dim (``symbolic``; with ``small-ints-constant`` an int input of at most 16 elements --
    axes, shapes, repeats -- an initializer holding its value instead): every inferred dim,
    evaluated at the real sizes, is the real output's, and no valid case is refused. Found: Split
    by sizes given at run time read as equal parts ([3], [3] for [2], [4]); onnx's inference of
    Attention-23 (which answered for it then) giving a 3-D output's last dim as 0 for a symbolic
    hidden size."""
    import numpy as np

    import shapeinfer
    from shapeinfer.symbolic import EvaluationError, evaluate, free_symbols

    wrong, refused, compared, exact = [], [], 0, 0
    for name, m, _, outputs, binding in conformance.every_case(dims, constants, skip=()):
        try:
            result = shapeinfer.infer(m)
        except shapeinfer.ShapeInferenceError as e:
            # (a dim made a symbol can break the node for onnxruntime too: StringNormalizer takes
            # [C] or [1, C], and refuses [N, C] at load -- refusing that variant is right)
            if not _onnxruntime_refuses(m):
                refused.append((name, str(e)[:200]))
            continue
        for o, arr in zip(m.graph.output, outputs):
            shape = result.shape(o.name) if isinstance(arr, np.ndarray) else None
            if shape is None:
                continue
            compared += 1
            if len(shape) != arr.ndim:
                wrong.append((name, o.name, result.shape_strs(o.name), arr.shape))
                continue
            known = 0
            for d, size in zip(shape, arr.shape):
                if free_symbols(d) - set(binding):
                    continue  # (a fresh symbol: unknown)
                try:
                    value = evaluate(d, binding)
                except EvaluationError:
                    continue
                if value != size:
                    wrong.append((name, o.name, result.shape_strs(o.name), arr.shape))
                    break
                known += 1
            exact += known == len(shape)
    assert compared > 1600, compared
    assert not wrong, wrong[:20]
    assert not refused, refused[:20]
    assert exact > (1700 if constants == "small-ints" else 1450), exact  # (most are expressed, not given up)


def _same_as_the_original(judged_of, cases, engine=None) -> tuple:
    """(cases compared, the differences) over ``cases`` (conformance.every_case): ``judged_of``
    turns each model into the one judged (a ShapeInferenceError: refused, not judged), which must load and give
    the original's outputs bit for bit -- in onnxruntime (onnx.reference where onnxruntime cannot
    run the original), or in ``engine`` only."""
    from tests.adversarial.runner import Runtime, same_bits

    import shapeinfer

    bad, compared = [], 0
    for name, m, feeds, _, _ in cases:
        try:
            judged = judged_of(m)
        except shapeinfer.ShapeInferenceError:
            continue  # (refused with a clear error: the tests above judge that)
        original = Runtime(m, engine)
        if not original.engine or engine and original.engine != engine:
            continue
        try:
            want = original.run(feeds)
        except Exception:  # noqa: BLE001 - the original does not run: nothing to compare
            continue
        rt = Runtime(judged, original.engine)
        if not rt.engine:
            bad.append((name, "does not load: " + rt.error[:200]))
            continue
        try:
            got = rt.run(feeds)
        except Exception as e:  # noqa: BLE001
            bad.append((name, "fails: " + str(e)[:200]))
            continue
        compared += 1
        for o in m.graph.output:
            why = same_bits(want[o.name], got[o.name])
            if why:
                bad.append((name, original.engine, o.name, why))
                break
    return compared, bad


@pytest.mark.parametrize("constants", ["none", "small-ints", "all"])
def test_every_backend_node_case_optimised_computes_the_same(constants):
    """Every node case onnx ships, its input dims symbolic, optimised: the result loads and gives
    the original's outputs bit for bit on the case's data (onnxruntime; onnx.reference where
    onnxruntime cannot run the original). ``constants``: which inputs become initializers --
    none, the small int inputs (the shape paths), or all of them (so that every op with a kernel
    is folded). Found: If branches returning optional types made optimize crash inside
    onnx-graphsurgeon; SpaceToDepth-28 in CRD mode was folded as DCR; a decided If's other branch
    failed onnxruntime's load-time check once the tensors it read were constants (inline-if)."""
    import shapeinfer

    compared, bad = _same_as_the_original(shapeinfer.optimize, conformance.every_case("symbolic", constants))
    assert compared > 1500, compared
    assert not bad, bad[:20]


@pytest.mark.parametrize("constants", ["none", "small-ints"])
def test_every_backend_node_case_annotated_loads_and_computes_the_same(constants):
    """Every node case onnx ships, input dims symbolic (``small-ints``: int inputs of at most 16
    elements as initializers), written back with its inferred shapes (infer_shapes): the model
    loads in onnxruntime -- the runtime that reads the shapes -- and gives the original's outputs
    bit for bit. Found: AffineGrid's function decides Ifs on the input's rank; the shapes written
    on what the branch never taken reads (and what that is computed from) made onnxruntime
    refuse that branch at load."""
    import shapeinfer

    compared, bad = _same_as_the_original(shapeinfer.infer_shapes, conformance.every_case("symbolic", constants),
                                          engine="onnxruntime")
    assert compared > 1400, compared
    assert not bad, bad[:20]
