"""Where the runtimes differ from the spec text, and the spec's answer for the ops we emit.

The spec text is the judge. For every node of the main graph, at every binding that ran, the
spec's output shape is computed from the *runtime* inputs of the node (``spec_shapes``) and
compared with what the runtime produced. A difference that matches a documented deviation below
marks that node's outputs and everything computed from them as *tainted* at that binding: those
tensors are compared with the spec's shape for the node itself and skipped downstream (and a
graph output so tainted is not compared between the original and the optimised model). A
difference that matches nothing below is counted as ``unlisted`` in the summary, with the node:
either a new runtime deviation (then it belongs in this list) or a mistake of the spec model.

Documented deviations (name: what the runtime does / what the spec says):
"""

from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

from . import spec
from .spec import INT32_MAX, INT64_MAX

KNOWN = {
    "ort-default-level-changes-original":
        "onnxruntime at its default level computes another result for the original model than its kernels "
        "do with optimisations off (seen: Gather along an axis by Range(-2, 3, 3) -- indices [-2, 1] -- "
        "gives one element, as if made a Slice from -2 to 3 by 3); a written model that computes what the "
        "kernels compute is not a failure.",
    "ort-resize-rank-checked-at-load":
        "onnxruntime, Resize in linear/cubic mode on a 1-D input (or past 5-D): unsupported; checked when the "
        "kernel is created if the input's rank is known then (an optimised model that carries its shapes "
        "fails to load), at run time otherwise. The spec allows any rank.",
    "ort-reduce-empty-negative-axis-ignored":
        "onnxruntime before 1.32, Reduce*/ArgMax/ArgMin on an empty input (every opset tried, 11-22): negative axes are "
        "ignored -- only the non-negative ones are reduced, and with none left the output keeps the input's "
        "shape; the spec reduces every axis given (1 with keepdims, removed without). The same axes written "
        "non-negative give the right shape.",
    "ort-reshape-allowzero-0-and-minus1":
        "onnxruntime, Reshape allowzero=1 with both 0 and -1 in the shape: runs; the spec says the shape is invalid.",
    "reshape-entry-below-minus-one":
        "onnxruntime and onnx.reference, Reshape with an entry below -1 (-2, -8): run, reading it like -1 "
        "when it is the only negative entry; the spec allows no entry below -1 (invalid).",
    "ort-split18-uneven":
        "onnxruntime, Split-18 with num_outputs that does not divide the axis: fails; the spec gives the last "
        "chunk the remainder (not tainting: the original then fails, nothing is compared).",
    "ort-scan-empty-axis-crash":
        "onnxruntime, Scan over a 0-length axis: crashes the process; such bindings are not run at all "
        "(gen.make_feeds).",
    "ort-half-ops-computed-in-float":
        "onnxruntime's CPU provider runs a float16 op it has no float16 kernel for (ReduceProd, Div, ...) in "
        "float32 between inserted Casts, and drops a Cast pair between two such ops: the value between them is "
        "never rounded to float16. ReduceProd of small float16 values then reads as 2.4e-11 to a Div right "
        "after it (0/0 gives 1.0) but as 0 through an Expand, which has a float16 kernel; the spec rounds each "
        "op's output to its type. A rewrite that takes such a node out changes onnxruntime's result: where a "
        "float16/bfloat16 output differs, onnx.reference judges (runner._half_judged_by_reference).",
    "ort-int-pow-through-double":
        "onnxruntime, integer Pow computes through double: large results lose low bits; the spec is exact "
        "integer arithmetic.",
    "ort-slice-intmax-end-negative-step":
        "onnxruntime, Slice with a negative step and an end of exactly INT32_MAX or INT64_MAX: runs down to "
        "index 0; the spec clamps the end to dim-1 and the slice is empty.",
    "ort-int64-min-div-minus1-sigfpe":
        "onnxruntime, integer Div/Mod of INT64_MIN by -1: the process dies of SIGFPE; the spec wraps "
        "(two's complement). The generator never builds it (recipes.arith_step).",
    "ref-slice-negative-step-start-below-dim":
        "onnx.reference, Slice with a negative step and a start below -dim: NumPy's clamping (an empty "
        "slice); the spec clamps the start to 0 and yields one element.",
    "ort-int64-reduce-through-double":
        "onnxruntime, ReduceSum/ReduceProd on int64: computed through double -- ReduceSum([2**53+1]) is 2**53, "
        "ReduceSum([-(2**63-1)]) is INT64_MIN, a sum past INT64_MAX saturates; the spec is exact (wrapping) "
        "integer arithmetic. Values only.",
    "ort-int-fmod-through-double":
        "onnxruntime, integer Mod with fmod=1: computed through double -- Mod(-(2**63-1), 3) is -2 (the double "
        "-2**63 mod 3), the spec's truncated remainder is -1. Values only, from 2**53 on.",
    "ort-int-reduce-saturates":
        "onnxruntime, integer reductions on int8..int32/uint types: computed in double and saturated -- "
        "int32 [2**30]*4 sums to 2147483647; the spec is exact (wrapping) integer arithmetic. Values only "
        "(counted where the result is the type's limit).",
    "ort-int64-max-min-wrong":
        "onnxruntime, Max/Min on int64 (opsets 12-18 at least): wrong for some values at or above 2**31 -- "
        "Max(0, 2**31) is 0, Min(0, 2**31) is 2**31, Max(1, 2**31) broadcast is 1 (Max(0, 2**32+5) is right); "
        "the spec is the element-wise maximum. Values only.",
    "ort-gather-string-rows":
        "onnxruntime, Gather of a string tensor whose gathered slices hold more than one element: only the "
        "first element of each slice is copied, the rest come back empty (Gather([[\"a\",\"b\"],...], [0]) is "
        "[[\"a\",\"\"]]); Identity and the other data movement keep them. Values only.",
    "ort-nonzero-scalar":
        "onnxruntime, NonZero of a scalar: output shape (1, nnz); the spec (and onnx.reference) give "
        "(0, nnz) -- rank(X) rows.",
    "ort-pool-window-larger-than-input":
        "onnxruntime, MaxPool/AveragePool/LpPool/Conv whose window is larger than the padded input: the output "
        "size is trunc((D+pads-window)/stride)+1, rounded toward zero, so 1 or 0 and the node runs; the spec's "
        "floor((D+pads-window)/stride)+1 is 0 or negative (invalid). Such sizes are compared with neither.",
    "ort-loop-zero-iterations-scan-output":
        "onnxruntime, Loop that runs zero iterations: a scan output has shape [0] plus zeros for the per-iteration "
        "dims it cannot see (rank 1 when the body does not declare one); the spec does not define the "
        "per-iteration shape of an empty concatenation, so these outputs are not compared. onnx.reference "
        "crashes on such a Loop.",
    "spec-undefined-empty-reduction":
        "the spec: ReduceMean over an empty set (and ReduceLogSum/ReduceLogSumExp for types without -inf) "
        "'yields undefined'; onnxruntime gives 0 for int64, NaN for floats. Values there are not compared "
        "(an optimiser may fold them to anything).",
    "ort-split18-without-split-or-num-outputs":
        "onnxruntime, Split-18 with neither the split input nor num_outputs: runs (the spec requires one of "
        "them). The generator no longer builds it.",
    "ort-outputs-depend-on-exposed-tensors":
        "onnxruntime (optimisations off): a float16 MatMul chain gives other last bits when an intermediate "
        "tensor is also a graph output; the CPU provider runs float16 Mul/Add/... in float32 between inserted "
        "Casts and drops Cast pairs, the rounding to float16 with them, unless the float16 tensor is a graph "
        "output (Cast(4097 -> float16) * 1.5 is 6145.5 as the model is, 6144 exposed and by the spec). "
        "Optimised and annotated models are therefore compared with the original as it is, not with the "
        "copy that exposes every tensor, and a binding where only the exposed copy runs is not judged "
        "(counted when the two differ).",
    "spec-undefined-cast":
        "the spec: a float Cast to an integer type of NaN, an infinity or a value that truncates out of the "
        "target's range is undefined (onnxruntime gives INT64_MIN on x86, and its value depends on the Cast "
        "pairs it drops). Values only.",
    "ort-ir3-initializer-inputs-not-overridable":
        "onnxruntime, IR version 3 (every initializer listed as a graph input): feeding such an input is refused "
        "('Invalid input name'); the IR spec makes an initializer with an input's name that input's default. "
        "The generator feeds initializers only from opset 9 (IR 4) on.",
    "ref-pool-window-larger-than-input":
        "onnx.reference, pools whose window is larger than the padded input: an empty output, where the spec's "
        "size is negative (invalid).",
    "ref-pool-asymmetric-pads":
        "onnx.reference, pools whose begin and end pads differ (kernel 3, pads [0, 2] over 3): fewer outputs "
        "(1) than the spec's floor((3 + 0 + 2 - 3) / 1) + 1 = 3, which onnxruntime gives.",
    "ref-pool-same-strided":
        "onnx.reference, pools with auto_pad SAME_UPPER/SAME_LOWER and a stride above 1: fewer outputs than "
        "the spec's ceil(size / stride) (MaxPool kernel 3, stride 2 over 3 gives 1, the spec and onnxruntime 2).",
    "ref-depth-space-indivisible":
        "onnx.reference, SpaceToDepth/DepthToSpace where a spatial dim (or the channels) is not a multiple "
        "of the blocksize (NumPy reshapes an empty tensor to anything): runs on an empty input; onnx's "
        "inference and onnxruntime refuse it at every size.",
    "ref-split-uneven":
        "onnx.reference, Split (before 18, or 18 without num_outputs) into equal parts of an axis they do not "
        "divide: runs (NumPy's array_split); the spec (and onnxruntime) refuse it.",
    "ref-loop-scan-outputs-concatenated":
        "onnx.reference, Loop scan outputs: the per-iteration values are np.vstack-ed -- concatenated along "
        "axis 0 -- so a per-iteration [2,1] over 3 iterations gives [6,1]; onnx's own Loop shape inference and "
        "onnxruntime stack them along a new axis ([3,2,1]). Loop scan outputs are not compared under "
        "onnx.reference.",
    "ref-global-pool-rank3":
        "onnx.reference, GlobalMaxPool/GlobalAveragePool of a rank-3 input [N,C,D]: a rank-2 output [N,C]; "
        "the spec (and onnxruntime) keep the spatial axis as 1: [N,C,1].",
    "onnx-checker-aborts":
        "onnx (1.23.2 wheel), C++ shape inference (onnx.shape_inference.infer_shapes, "
        "onnx.checker.check_model(full_check=True)) on a Slice of an input dim written dim_value -1: "
        "std::clamp's assertion fails and the process aborts (SIGABRT). The judge runs the checker in a "
        "forked process and counts these.",
    "onnx-checker-initializer-input-as-constant":
        "onnx.checker (full_check) infers shapes from the stored value of an initializer that is also a graph "
        "input, so a declared shape that holds for the fed value is refused; not a runtime difference, the "
        "checker's verdict on such models is not used (runner.check_optimized).",
    "ort-default-level-refuses-original":
        "onnxruntime at its default optimisation level refuses a model it loads with optimisations off: its "
        "rewrites (ReshapeFusion on a shape holding a copied 0) make a shape its own inference rejects ('Invalid "
        "Target shape product of 0'). A written model is compared at that level only where the original loads.",
    "ort-no-kernel":
        "onnxruntime refuses at load a valid model holding an op or element type it has no kernel for "
        "(NOT_IMPLEMENTED); the spec defines it. check's verdict is not judged against that refusal "
        "(runner.judge_load_verdict); the model runs in onnx.reference.",
    "ort-fp16-casts-old-opset":
        "onnxruntime, a float16 op it has no float16 kernel for at an opset below 6: it inserts Casts to float "
        "with an integer 'to', which Cast-1 takes as a string, and refuses its own graph ('Mismatched attribute "
        "type in InsertedPrecisionFreeCast'). The spec defines the model; counted, not judged.",
}
__doc__ += "\n".join(f"- {k}: {v}" for k, v in KNOWN.items())

REDUCE_OPS = {"ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "ReduceMean", "ReduceL1", "ReduceL2",
              "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}


def opset_of(model, domain="") -> int:
    for o in model.opset_import:
        if o.domain == domain or (domain == "" and o.domain == "ai.onnx"):
            return o.version
    return 0


def _attrs(node) -> dict:
    out = {}
    for a in node.attribute:
        if a.ref_attr_name:
            continue
        v = helper.get_attribute_value(a)
        if a.type == a.TENSOR:
            v = numpy_helper.to_array(v)
        out[a.name] = v
    return out


def _pair(arr):
    if arr is None:
        return None
    arr = np.asarray(arr)
    val = arr if arr.dtype.kind in "iub" and arr.size <= 4096 else None
    return (tuple(arr.shape), val)


def spec_shapes(node, opset, ins):
    """The spec's output shapes of node from the runtime input arrays (None where an input is
    absent), or None when this module has no rule for the op or cannot tell."""
    if node.domain not in ("", "ai.onnx"):
        return None
    op = node.op_type
    a = _attrs(node)
    pairs = [_pair(x) for x in ins]
    try:
        if op == "Reshape":
            res = spec.reshape(a, pairs, opset)
        elif op == "Expand":
            res = spec.expand(a, pairs)
        elif op == "Tile" and opset >= 6:
            res = spec.tile(a, pairs, opset)
        elif op == "Slice":
            res = spec.slice_op(a, pairs, opset)
        elif op == "Shape":
            res = spec.shape_op(a, pairs)
        elif op == "Gather":
            res = spec.gather(a, pairs)
        elif op == "Concat":
            res = spec.concat(a, pairs)
        elif op == "Unsqueeze":
            res = spec.unsqueeze(a, pairs, opset)
        elif op == "Squeeze":
            res = spec.squeeze(a, pairs, opset)
        elif op in REDUCE_OPS:
            from_input = (op == "ReduceSum" and opset >= 13) or opset >= 18
            res = spec.reduce_op(op, a, pairs, from_input)
        elif op in ("ArgMax", "ArgMin"):
            res = spec.argmax(a, pairs)
        elif op == "Range":
            res = spec.range_op(a, pairs)
        elif op == "ConstantOfShape":
            res = spec.constant_of_shape({}, pairs, 0)
        elif op == "Flatten":
            res = spec.flatten(a, pairs)
        elif op == "Transpose":
            res = spec.transpose(a, pairs)
        elif op == "Size":
            res = spec.size_op(a, pairs)
        elif op in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool") and pairs[0] is not None:
            sh = pairs[0][0]
            res = [(tuple(sh[:2]) + (1,) * (len(sh) - 2), None)]
        elif op == "Split":
            res = spec.split(a, pairs, opset, len(node.output))
        elif op == "NonZero" and ins[0] is not None:
            res = [((np.ndim(ins[0]), int(np.count_nonzero(ins[0]))), None)]
        elif op in ("MaxPool", "AveragePool", "LpPool") and "kernel_shape" in a:
            res = [(tuple(spec.pool(a, pairs)), None)] + ([(tuple(spec.pool(a, pairs)), None)] if len(node.output) > 1 and node.output[1] else [])
        elif op == "Conv" and pairs[1] is not None:
            w = pairs[1][0]
            ks = a.get("kernel_shape", list(w[2:]))
            sp = spec.pool(a, pairs, kernel_from_weight=ks)
            res = [((sp[0], w[0]) + tuple(sp[2:]), None)]
        elif op in ("SpaceToDepth", "DepthToSpace") and pairs[0] is not None and len(pairs[0][0]) == 4:
            n, c, h, w = pairs[0][0]
            bs = int(a.get("blocksize", 0))
            if bs < 1:
                raise spec.Invalid("blocksize")
            if op == "SpaceToDepth":
                if h % bs or w % bs:
                    raise spec.Invalid("a spatial dim is not a multiple of the blocksize")
                res = [((n, c * bs * bs, h // bs, w // bs), None)]
            else:
                if c % (bs * bs):
                    raise spec.Invalid("the channels are not a multiple of blocksize**2")
                res = [((n, c // (bs * bs), h * bs, w * bs), None)]
        elif op in ("Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "Equal", "Greater", "Less", "Where", "Pow"):
            res = [(spec.bcast(*(p[0] for p in pairs if p is not None)), None)]
        else:
            return None
    except spec.Invalid:
        return "invalid"
    except (spec.Unknown, KeyError, TypeError, ValueError, IndexError):
        return None
    return [tuple(s) for s, _ in res]


def classify(node, opset, ins, outs, spec_out, engine) -> str:
    """The name of the documented deviation this difference is, or 'unlisted'."""
    op = node.op_type
    a = _attrs(node)
    if op == "Reshape" and len(ins) > 1 and ins[1] is not None and np.any(np.asarray(ins[1]) < -1):
        return "reshape-entry-below-minus-one"
    if engine == "onnxruntime":
        if (op in REDUCE_OPS or op in ("ArgMax", "ArgMin")) and ins[0] is not None and ins[0].size == 0 \
                and outs[0] == _reduce_ignoring_negative_axes(node, opset, ins):
            return "ort-reduce-empty-negative-axis-ignored"
        if op == "Reshape" and a.get("allowzero", 0) and opset >= 14:
            t = np.asarray(ins[1]).reshape(-1)
            if (t == 0).any() and (t == -1).any():
                return "ort-reshape-allowzero-0-and-minus1"
        if op == "Slice" and opset >= 10 and len(ins) > 4 and ins[4] is not None:
            ends, steps = np.asarray(ins[2]).reshape(-1), np.asarray(ins[4]).reshape(-1)
            if any(k < 0 and e in (INT32_MAX, INT64_MAX) for e, k in zip(ends.tolist(), steps.tolist())):
                return "ort-slice-intmax-end-negative-step"
        if op == "Pow" and ins[0] is not None and np.asarray(ins[0]).dtype.kind in "iu":
            return "ort-int-pow-through-double"
        if op == "NonZero" and ins[0] is not None and np.ndim(ins[0]) == 0:
            return "ort-nonzero-scalar"
        if op in ("MaxPool", "AveragePool", "LpPool", "Conv") and ins[0] is not None:
            if _window_larger(node, a, ins):
                return "ort-pool-window-larger-than-input"
    else:
        if op in ("MaxPool", "AveragePool", "LpPool", "Conv") and ins[0] is not None and _window_larger(node, a, ins):
            return "ref-pool-window-larger-than-input"
        if op in ("MaxPool", "AveragePool", "LpPool") and "pads" in a and len(a["pads"]) % 2 == 0 and \
                list(a["pads"][:len(a["pads"]) // 2]) != list(a["pads"][len(a["pads"]) // 2:]):
            return "ref-pool-asymmetric-pads"
        if op in ("MaxPool", "AveragePool", "LpPool") and str(a.get("auto_pad", b"NOTSET")).find("SAME") >= 0 \
                and any(st > 1 for st in a.get("strides", [])):
            return "ref-pool-same-strided"
        if op == "Split" and spec_out == "invalid":
            return "ref-split-uneven"
        if op in ("SpaceToDepth", "DepthToSpace") and spec_out == "invalid":
            return "ref-depth-space-indivisible"
        if op in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool") and len(np.shape(ins[0])) == 3:
            return "ref-global-pool-rank3"
        if op == "Slice" and opset >= 10 and len(ins) > 4 and ins[4] is not None:
            starts, steps = np.asarray(ins[1]).reshape(-1), np.asarray(ins[4]).reshape(-1)
            axes = np.asarray(ins[3]).reshape(-1) if ins[3] is not None else np.arange(len(starts))
            shape = np.asarray(ins[0]).shape
            if any(k < 0 and s < -shape[ax] for s, k, ax in zip(starts.tolist(), steps.tolist(), axes.tolist())):
                return "ref-slice-negative-step-start-below-dim"
    return "unlisted"


def _reduce_ignoring_negative_axes(node, opset, ins):
    """The output shape of a reduction that skips its negative axes (onnxruntime on empty inputs)."""
    a = _attrs(node)
    shape = tuple(np.shape(ins[0]))
    keep = a.get("keepdims", 1)
    if node.op_type in ("ArgMax", "ArgMin"):
        axes = [a.get("axis", 0)]
    elif (node.op_type == "ReduceSum" and opset >= 13) or opset >= 18:
        axes = None if len(ins) < 2 or ins[1] is None else np.asarray(ins[1]).reshape(-1).tolist()
    else:
        axes = a.get("axes")
    if axes is None or len(axes) == 0 or all(x >= 0 for x in axes):
        return None  # no negative axis involved (nothing for this deviation to explain)
    axes = [x for x in axes if x >= 0]
    if not axes:
        return shape
    return tuple(1 if i in axes else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in axes)


def _window_larger(node, a, ins) -> bool:
    shape = np.shape(ins[0])
    if node.op_type == "Conv":
        if len(ins) < 2 or ins[1] is None:
            return False
        k = a.get("kernel_shape", list(np.shape(ins[1])[2:]))
    else:
        k = a.get("kernel_shape")
    if not k or len(shape) != len(k) + 2:
        return False
    n = len(k)
    dil = a.get("dilations", [1] * n)
    pads = a.get("pads", [0] * 2 * n)
    return any(shape[2 + i] + pads[i] + pads[n + i] < (k[i] - 1) * dil[i] + 1 for i in range(n))


def value_deviation(node, opset, ins, outs, engine) -> str:
    """A deviation in values only (shapes agree): integer Pow and int64 reductions through double."""
    if node.domain not in ("", "ai.onnx") or not ins or ins[0] is None:
        return ""
    if node.op_type in ("ReduceMean", "ReduceLogSum", "ReduceLogSumExp") and _reduces_empty_set(node, opset, np.asarray(ins[0])):
        return "spec-undefined-empty-reduction"
    if node.op_type in ("Cast", "CastLike") and _cast_undefined(node, ins):
        return "spec-undefined-cast"
    if engine != "onnxruntime":
        return ""
    x = np.asarray(ins[0])
    if node.op_type == "Pow" and x.dtype.kind in "iu":
        return "ort-int-pow-through-double"
    if node.op_type == "Gather" and x.dtype == object and outs and outs[0] is not None and len(ins) > 1 and ins[1] is not None:
        a = _attrs(node)
        axis = a.get("axis", 0)
        try:
            want = np.take(x, np.asarray(ins[1]).astype(np.int64), axis=axis)
        except (IndexError, ValueError):
            return ""
        if want.shape == np.shape(outs[0]) and want.tolist() != np.asarray(outs[0]).tolist():
            return "ort-gather-string-rows"
    if node.op_type == "Mod" and _attrs(node).get("fmod", 0) and x.dtype.kind in "iu" and len(ins) > 1 \
            and ins[1] is not None:
        big = [abs(int(v)) for arr in ins[:2] for v in np.asarray(arr).reshape(-1).tolist()]
        if max(big, default=0) >= 2**53:
            return "ort-int-fmod-through-double"
    if node.op_type in ("Max", "Min") and x.dtype.kind in "iu" and outs and outs[0] is not None \
            and all(i is not None for i in ins):
        fn = np.maximum if node.op_type == "Max" else np.minimum
        exact = ins[0]
        for other in ins[1:]:
            exact = fn(exact, other)
        if not np.array_equal(np.asarray(exact), np.asarray(outs[0])):
            return "ort-int64-max-min-wrong"
    if node.op_type in ("ReduceSum", "ReduceProd", "ReduceSumSquare", "ReduceMean") and x.dtype == np.int64 \
            and outs and outs[0] is not None:
        big = [abs(int(v)) for v in x.reshape(-1).tolist()] + [abs(int(v)) for v in np.asarray(outs[0]).reshape(-1).tolist()]
        if max(big, default=0) >= 2**53:
            return "ort-int64-reduce-through-double"
    if node.op_type in REDUCE_OPS and x.dtype.kind in "iu" and x.dtype != np.int64 and outs and outs[0] is not None:
        info = np.iinfo(x.dtype)
        if np.any(np.isin(np.asarray(outs[0]), [info.min, info.max])):
            return "ort-int-reduce-saturates"
    return ""


def _cast_undefined(node, ins) -> bool:
    """A float cast to an integer type where some value is NaN, infinite or truncates out of the
    target's range: the spec leaves the result undefined (runtimes differ by platform)."""
    x = np.asarray(ins[0])
    if x.dtype.kind != "f" and x.dtype.name not in ("bfloat16",) and not x.dtype.name.startswith("float8"):
        return False
    if node.op_type == "Cast":
        to = _attrs(node).get("to")
        try:
            dst = np.dtype(helper.tensor_dtype_to_np_dtype(int(to)))
        except Exception:  # noqa: BLE001
            return False
    else:
        if len(ins) < 2 or ins[1] is None:
            return False
        dst = np.asarray(ins[1]).dtype
    if dst.kind not in "iu":
        return False
    info = np.iinfo(dst)
    with np.errstate(all="ignore"):
        t = np.trunc(x.astype(np.float64))
        return bool(np.any(~np.isfinite(t) | (t < float(info.min)) | (t >= float(info.max) + 1)))


def _reduces_empty_set(node, opset, x) -> bool:
    """Some output element of the reduction is over an empty set of values."""
    if x.size:
        return False
    a = _attrs(node)
    if a.get("noop_with_empty_axes", 0):
        return False
    return True  # an empty input: every output element reduces an empty set, or there is no output element


def loop_scan_outputs(node) -> list:
    if node.op_type != "Loop" or node.domain not in ("", "ai.onnx"):
        return []
    n_state = len(node.input) - 2
    return [o for o in node.output[n_state:] if o]


def zero_trip_loop(node, ins) -> bool:
    """A Loop that runs no iteration (trip count 0, or the condition false at the start)."""
    if node.op_type != "Loop" or node.domain not in ("", "ai.onnx"):
        return False
    m = ins[0] if ins else None
    c = ins[1] if len(ins) > 1 else None
    return (m is not None and int(np.asarray(m).reshape(-1)[0]) <= 0) or (c is not None and not bool(np.asarray(c).reshape(-1)[0]))
