"""``shapeinfer``: thin click commands over the library.

``shapeinfer MODEL`` is the same as ``shapeinfer infer MODEL``; the group leaves room for more
commands beside ``infer``. Errors become one line on stderr and an exit code in :func:`main`:
1 for an invalid model (``check``: a model with errors; ``optimize --verify``: a difference),
2 for bad usage, an unreadable file or nothing compared, 3 for an internal error (a bug of ours,
one line instead of a traceback), 130 when interrupted.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
import time

import click

from shapeinfer.modelio.text import one_line

EXIT_INVALID_MODEL = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


class DefaultGroup(click.Group):
    """A group whose first argument, when it is not a command name, goes to ``infer``."""

    default_command = "infer"

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            word = args[0]
            if not word.startswith("-") and not os.path.exists(word) and not os.path.splitext(word)[1]:
                close = difflib.get_close_matches(word, list(self.commands), n=1, cutoff=0.6)
                if close:  # a misspelt command, not a model path
                    raise click.UsageError(f"no command {word!r}: did you mean `{close[0]}`?", ctx)
            args = [self.default_command] + list(args)
        return super().parse_args(ctx, args)


def _version() -> str:
    from shapeinfer import __version__

    return __version__


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version(), "--version", prog_name="shapeinfer")
def cli():
    """Symbolic shape inference for ONNX models.

    \b
    shapeinfer MODEL            shapes of every Expand/Reshape/Tile, inputs and outputs
    shapeinfer MODEL --all      every tensor
    shapeinfer MODEL --json     the same data as JSON
    shapeinfer MODEL -o OUT     also write the model with the shapes written in
    shapeinfer optimize MODEL -o OUT      simplify the model
    shapeinfer check MODEL...   validate models (CI): exit 0 clean, 1 errors, 2 unreadable
    shapeinfer cost MODEL       MACs, FLOPs, parameters, activation memory in the input dims
    """


def _input_shapes(model, items) -> dict:
    """--input-shape items (NAME:d0,d1,... or NAME=d0,d1,...) resolved against the model's input
    names; an InputShapeError (a usage error) for an item that names none of them."""
    from shapeinfer.infer.overrides import parse_input_shape_args

    return parse_input_shape_args(items, [vi.name for vi in model.graph.input])


def _input_files(model, model_path: str) -> list:
    """(path, what) for every file the input reads: the model and its external data files."""
    from shapeinfer.modelio.external import external_data_files

    folder = os.path.dirname(os.path.abspath(model_path))
    return [(model_path, "the input model")] + [
        (p, "external data the input model reads") for p in external_data_files(model, folder)]


def _external_data_options(f):
    f = click.option("--size-threshold", "size_threshold", type=click.IntRange(min=0), default=None, metavar="BYTES",
                     help="With --external-data: tensors of at least this many bytes go into FILE, smaller ones "
                          "stay inline (default 1024, as onnx.save_model). Tensors already external stay external; "
                          "tensors of at most 64 elements are always inline (runtimes refuse shape tensors stored "
                          "outside the model).")(f)
    f = click.option("--external-data", "external_data", metavar="FILE",
                     help="Store the tensors as external data in FILE, a file name beside the output. A model with "
                          "external data always gets its data file beside the output (default OUTPUT.data); "
                          "its tensors are copied there, the source's files are never changed.")(f)
    return f


def _dim_names_option(f):
    return click.option(
        "--dim-names", "dim_names", type=click.Choice(["expressions", "identifiers"]), default="expressions",
        show_default=True,
        help="How symbolic dims are written into the output model: expressions (batch*seq) or identifiers "
             "(batch_x_seq, the mapping in metadata_props under shapeinfer.dim_names).")(f)


def _check_output_options(output, external_data, size_threshold) -> int:
    """The size threshold to write with; refuses data-file options that cannot apply."""
    from shapeinfer.modelio.writer import DEFAULT_SIZE_THRESHOLD

    if not output and (external_data is not None or size_threshold is not None):
        raise click.UsageError("--external-data and --size-threshold apply to the model written with -o")
    if size_threshold is not None and external_data is None:
        raise click.UsageError("--size-threshold applies with --external-data FILE (the file the tensors go to)")
    return DEFAULT_SIZE_THRESHOLD if size_threshold is None else size_threshold


def _echo_report(text: str, dest) -> None:
    """The human report on stdout -- or on stderr when the output file is our stdout."""
    click.echo(text, err=dest is not None and dest.is_stdout())


@cli.command("infer")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=True))
@click.option("--all", "all_tensors", is_flag=True, help="List every tensor, not only Expand/Reshape/Tile.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False), help="Write the annotated model here.")
@click.option(
    "--input-shape",
    "input_shape",
    multiple=True,
    metavar="NAME:DIMS",
    help="Override an input's shape, e.g. --input-shape x:1,seq,768 or x=1,seq,768 (repeatable; NAME is the "
         "longest input name followed by ':' or '=', so names holding them, as input:0, work).",
)
@click.option(
    "--assume-nonempty",
    is_flag=True,
    help="Assume no tensor is empty (every dim of every tensor is at least 1); reported in the output.",
)
@click.option("--op", "ops", multiple=True, metavar="OP",
              help="List the nodes of this op type (repeatable; default Expand, Reshape and Tile).")
@click.option("--node", "node_glob", metavar="GLOB", help="List only the nodes whose name matches, e.g. '*attn*'.")
@click.option("--wide", is_flag=True, help="Do not cut the tables to the terminal's width.")
@_dim_names_option
@_external_data_options
def infer_cmd(model_path, all_tensors, as_json, output, input_shape, assume_nonempty, ops, node_glob, wide,
              dim_names, external_data, size_threshold):
    """Infer and print the shapes of MODEL.

    The tables fit the terminal (COLUMNS, or the terminal's width; --wide keeps every cell
    whole); nodes with the same shapes (one per layer) are one row, counted (x12). Colour only
    on a terminal, never with NO_COLOR set."""
    import shapeinfer
    from shapeinfer.graph.structure import validate_structure
    from shapeinfer.modelio.writer import check_model_destination, write_model

    from .render import render_table

    if any(not op.strip() for op in ops):
        raise click.BadParameter("an op type is a name, e.g. --op MatMul", param_hint="--op")
    threshold = _check_output_options(output, external_data, size_threshold)
    model = shapeinfer.load_model(model_path)
    overrides = _input_shapes(model, input_shape)
    model_dir = os.path.dirname(os.path.abspath(model_path))
    dest = None
    if output:  # refused before the work: the input, its data, a directory, ...
        inputs = _input_files(model, model_path)
        dest = check_model_destination(model, output, source_dir=model_dir, external_data=external_data,
                                       protected=inputs)
    validate_structure(model)  # optimize does this in its API; infer's API takes partial graphs
    result = shapeinfer.infer(model, input_shapes=overrides, assume_nonempty=assume_nonempty, base_dir=model_dir)
    written = None
    if output:
        annotated = shapeinfer.annotate(model, result, overrides)
        if dim_names == "identifiers":
            from shapeinfer.infer.dim_names import identifier_dim_names

            identifier_dim_names(annotated)
        written = write_model(annotated, output, source_dir=model_dir, external_data=external_data,
                              size_threshold=threshold, protected=inputs)
    if as_json:
        data = result.to_dict(all_tensors=all_tensors)
        data["model"] = model_path
        if written is not None:
            data["written"] = written.as_dict()
        _echo_report(json.dumps(data, indent=2), dest)
    else:
        text = render_table(result, model_path, all_tensors=all_tensors, ops=ops, node_glob=node_glob,
                            width=None if wide else terminal_width(), color=use_color())
        if written is not None:
            text += f"\n{one_line(f'annotated model written to {output}')}"
            if written.describe():
                text += f"\n{one_line(written.describe())}"
        _echo_report(text, dest)


def terminal_width():
    """The width the tables fit: COLUMNS when set, else the terminal's; None when the output is
    no terminal (a file or a pipe gets whole lines)."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    if _on_terminal():
        try:
            return os.get_terminal_size(sys.stdout.fileno()).columns
        except OSError:  # (a terminal of no size)
            pass
    return None


def _on_terminal() -> bool:
    """Whether standard output is a terminal (a stream replaced by one without ``isatty``, or
    closed, is not)."""
    isatty = getattr(sys.stdout, "isatty", None)
    if isatty is None:
        return False
    try:
        return bool(isatty())
    except ValueError:  # (a closed stream)
        return False


def use_color() -> bool:
    """Colour on a terminal only, and never with NO_COLOR set (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    return _on_terminal()


def _names(value):
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _parse_bind(bind) -> dict:
    values = {}
    for item in bind:
        name, _, vals = item.partition("=")
        name = name.strip()
        try:
            sizes = [int(v) for v in vals.split(",") if v.strip()] if vals.isascii() else []
        except ValueError:
            sizes = []
        if not name or not sizes or min(sizes) < 0:
            raise click.BadParameter(f"{item!r}: expected SYMBOL=V1,V2,... with sizes >= 0", param_hint="--bind")
        if name in values:
            raise click.BadParameter(f"{name!r} is given twice (give its sizes at once: {name}=V1,V2)",
                                     param_hint="--bind")
        values[name] = sizes
    return values


@cli.command("optimize")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=True))
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False), help="Where to write the optimised model.")
@click.option("--passes", "passes", metavar="P1,P2", help="Run only these passes (comma-separated).")
@click.option("--skip", "skip", metavar="P1,P2", help="Do not run these passes.")
@click.option("--explain", is_flag=True, help="List each Reshape/Expand/Tile that was kept and why.")
@click.option("--verify", "do_verify", is_flag=True,
              help="Run both models (onnxruntime) on the same inputs at several sizes and compare the outputs "
                   "bit for bit; exit 1 on a difference, 2 if nothing could be compared; nothing is written then.")
@click.option("--fold-budget", "fold_budget", type=click.IntRange(min=0), default=None, metavar="BYTES",
              help="Largest folded constant allowed beyond its inputs' size (default 16384).")
@click.option("--assume-nonempty", is_flag=True, help="Assume no tensor is empty (allows more rewrites); reported.")
@click.option("--ignore-signed-zero", is_flag=True,
              help="Also drop x + 0.0, which turns -0.0 into +0.0 (as onnxsim/onnxslim do); reported.")
@click.option("--fold-float-math", is_flag=True,
              help="Also fold float math (transcendental functions, reductions, MatMul) with NumPy: results may "
                   "differ from a runtime's in the last bits; reported, and --verify then allows a tolerance.")
@click.option("--fuse-gemm", is_flag=True,
              help="Fuse MatMul + bias Add into Gemm: the bias is added in another order, so results may differ "
                   "in the last bits; reported, and --verify then allows a tolerance.")
@click.option("--bind", "bind", multiple=True, metavar="SYMBOL=V1,V2,V3",
              help="Sizes --verify gives a symbolic input dim (repeatable), e.g. --bind height=32,64,48.")
@click.option("--input-shape", "input_shape", multiple=True, metavar="NAME:DIMS",
              help="Fix an input's shape and fold what becomes static, e.g. --input-shape x:1,16 (repeatable; "
                   "symbols allowed, as for `infer`). The output model takes only these shapes.")
@click.option("--dims", "dims", multiple=True, metavar="NAME=SIZES",
              help="The sizes a dim is run at, as check takes them (--dims seq=1..4096): an opt-in -- rewrites may "
                   "assume each dim at least its least size, and the written model computes what the original does "
                   "at those sizes (reported); --verify samples them.")
@click.option("--no-shapes", "no_shapes", is_flag=True,
              help="Do not write the inferred shapes (value_info) into the output model.")
@_dim_names_option
@_external_data_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def optimize_cmd(model_path, output, passes, skip, explain, do_verify, fold_budget, assume_nonempty,
                 ignore_signed_zero, fold_float_math, fuse_gemm, bind, input_shape, dims, no_shapes, dim_names,
                 external_data, size_threshold, as_json):
    """Simplify MODEL (constant folding, Reshape/Expand/Tile rewrites) and write it to OUTPUT,
    every inferred shape written in."""

    import shapeinfer
    from shapeinfer.fold.folder import DEFAULT_BUDGET_BYTES
    from shapeinfer.optimizer.manager import OptimizeReport, UnknownPassError, optimize, select_passes
    from shapeinfer.modelio.writer import check_model_destination, write_model

    from .render import render_optimize, verify_failure

    try:
        selected = select_passes(_names(passes), _names(skip) or (), fuse_gemm)
    except UnknownPassError as e:
        raise click.BadParameter(f"unknown pass {e.name!r} (passes: {', '.join(e.known)})",
                                 param_hint="--passes/--skip") from None
    values = _parse_bind(bind)
    if values and not do_verify:
        raise click.UsageError("--bind gives the sizes --verify runs the models at; it needs --verify")
    threshold = _check_output_options(output, external_data, size_threshold)
    model = shapeinfer.load_model(model_path)
    overrides = _input_shapes(model, input_shape)
    model_dir = os.path.dirname(os.path.abspath(model_path))
    if values:
        from shapeinfer.optimizer.verify import input_symbols

        symbols = input_symbols(_with_fixed_inputs(model, overrides) if overrides else model)
        for name in values:
            if name not in symbols:
                raise click.BadParameter(
                    f"{name!r} is no symbolic dim of the model's inputs (symbols: {', '.join(symbols) or 'none'})",
                    param_hint="--bind")
    sizes = None
    if dims:
        from shapeinfer.errors import InputShapeError
        from shapeinfer.infer.overrides import resolve_dims

        try:
            sizes = resolve_dims(list(dims), model)
        except InputShapeError as e:
            raise click.BadParameter(str(e), param_hint="--dims") from None
        for name, d in sizes.items():  # (--verify runs at the ends and the middle of each, where --bind does not say)
            if name not in values:
                picks = d.values if d.values is not None else (d.lo, (d.lo + d.hi) // 2, d.hi)
                values[name] = sorted(set(picks))[:MAX_VERIFY_SIZES]
    inputs = _input_files(model, model_path)
    dest = check_model_destination(model, output, source_dir=model_dir, external_data=external_data, protected=inputs)
    progress = Progress(enabled=not as_json)
    report = OptimizeReport()
    optimized = optimize(model, passes=_names(passes), skip=_names(skip) or (),
                         fold_budget=DEFAULT_BUDGET_BYTES if fold_budget is None else fold_budget,
                         assume_nonempty=assume_nonempty, ignore_signed_zero=ignore_signed_zero,
                         fold_float_math=fold_float_math, fuse_gemm=fuse_gemm, input_shapes=overrides,
                         write_shapes=not no_shapes, dim_names=dim_names, progress=progress, report=report,
                         dims=sizes)
    verdict = None
    original = model
    if do_verify:
        from shapeinfer.optimizer.verify import bindings_for, verify

        progress("verifying with onnxruntime")
        inexact = fold_float_math or fuse_gemm or "fuse-gemm" in selected  # the opt-ins that are not bit-exact
        original = _with_fixed_inputs(model, overrides, optimized) if overrides else model  # run at those shapes
        verdict = verify(original, optimized, bindings=bindings_for(original, values=values), exact=not inexact,
                         signed_zeros=not ignore_signed_zero, base_dir=model_dir)
    progress.done()
    if verdict is not None and not verdict.ok:
        click.echo(_optimize_json(report, verdict, None) if as_json
                   else render_optimize(report, model_path, output, explain, verdict))
        message, code = verify_failure(verdict, original)
        _error(message)
        raise SystemExit(code)
    written = write_model(optimized, output, source_dir=model_dir, external_data=external_data,
                          size_threshold=threshold, protected=inputs)
    if as_json:
        _echo_report(_optimize_json(report, verdict, written), dest)
    else:
        _echo_report(render_optimize(report, model_path, output, explain, verdict, written), dest)


MAX_VERIFY_SIZES = 4  # sizes of a --dims entry --verify runs at


def _with_fixed_inputs(model, overrides: dict, optimized=None):
    """A copy of ``model`` whose inputs have the shapes ``optimized`` has for them (or, without
    it, the overridden ones the shapes given, symbols as dim names) -- the original as --verify
    runs it."""
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    fixed = {vi.name: vi for vi in optimized.graph.input} if optimized is not None else {}
    for vi in copy.graph.input:
        if vi.name in fixed:  # (an input sharing a given input's dims was fixed too)
            vi.type.CopyFrom(fixed[vi.name].type)
            continue
        if vi.name not in overrides:
            continue
        shape = vi.type.tensor_type.shape
        shape.ClearField("dim")
        for d in overrides[vi.name]:
            dim = shape.dim.add()
            if isinstance(d, int):
                dim.dim_value = d
            else:
                dim.dim_param = str(d)
    return copy


def _optimize_json(report, verdict, written) -> str:
    """The JSON report of ``optimize``: the passes' report, the verdict of --verify (when it
    ran) and what was written (null when nothing was)."""
    from shapeinfer.infer.result import JSON_SCHEMA_VERSION

    data = {"schema_version": JSON_SCHEMA_VERSION, **report.as_dict()}
    if verdict is not None:
        data["verify"] = verdict.as_dict()
    data["written"] = written.as_dict() if written is not None else None
    return json.dumps(data, indent=2)


@cli.command("cost")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=True))
@click.option("--bind", "bind", multiple=True, metavar="SYMBOL=V",
              help="Give a symbol its size (repeatable), e.g. --bind batch=1 --bind seq=128: the figures are numbers.")
@click.option("--input-shape", "input_shape", multiple=True, metavar="NAME:DIMS",
              help="Override an input's shape, as for `infer` (repeatable).")
@click.option("--assume-nonempty", is_flag=True, help="Assume no tensor is empty (see `shapeinfer infer --help`).")
@click.option("--top", "top", type=click.IntRange(0, 10000), default=10, show_default=True,
              help="How many of the costliest nodes to list.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (exact integer coefficients).")
@click.option("--wide", is_flag=True, help="Do not cut the tables to the terminal's width.")
@click.option("--dims", "dims", multiple=True, metavar="NAME=SIZES",
              help="Sizes of a dim, as check takes them (repeatable): one size evaluates (--dims seq=128, as --bind), "
                   "a range or a set sweeps (--dims seq=1..4096, --dims batch=1,2,4): the totals at each size.")
def cost_cmd(model_path, bind, input_shape, assume_nonempty, top, as_json, wide, dims):
    """MACs, FLOPs, parameters and activation memory of MODEL, as formulas in its input dims
    (or numbers with --bind)."""
    import shapeinfer
    from shapeinfer.costs import cost
    from shapeinfer.errors import BindError, InputShapeError
    from shapeinfer.infer.overrides import resolve_dims

    from .render import render_cost

    values = {}
    for item in bind:
        name, _, v = item.partition("=")
        if not name.strip() or not (v.strip().isascii() and v.strip().isdigit()):
            raise click.BadParameter(f"{item!r}: expected SYMBOL=SIZE with a size >= 0", param_hint="--bind")
        if name.strip() in values:
            raise click.BadParameter(f"{name.strip()!r} is given twice", param_hint="--bind")
        values[name.strip()] = int(v)
    model = shapeinfer.load_model(model_path)
    overrides = _input_shapes(model, input_shape)
    if dims:
        try:
            sizes = resolve_dims(list(dims), model)
        except InputShapeError as e:
            raise click.BadParameter(str(e), param_hint="--dims") from None
        if set(sizes) & set(values):
            raise click.BadParameter(f"{sorted(set(sizes) & set(values))[0]!r} is given by --bind and --dims",
                                     param_hint="--dims")
        values.update({n: d.lo for n, d in sizes.items() if d.lo == d.hi and d.values is None})
        swept = {n: d for n, d in sizes.items() if not (d.lo == d.hi and d.values is None)}
        if swept:
            _cost_sweep(model, model_path, values, swept, overrides, assume_nonempty, as_json)
            return
    try:
        report = cost(model, bind=values, input_shapes=overrides, assume_nonempty=assume_nonempty,
                      base_dir=os.path.dirname(os.path.abspath(model_path)))
    except BindError as e:
        raise click.BadParameter(str(e), param_hint="--bind") from None
    report.model = model_path
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2))
    else:
        click.echo(render_cost(report, width=None if wide else terminal_width(), top=top))


MAX_SWEEP = 12  # sizes a --dims range is swept at


def _cost_sweep(model, model_path, values, swept, overrides, assume_nonempty, as_json):
    """The totals of cost at each size of the swept dims (each at its samples, the others at
    theirs in step): a table, or JSON."""
    from shapeinfer.costs import cost
    from shapeinfer.errors import BindError

    pools = {n: _spread(d.samples()) for n, d in swept.items()}
    steps = max(len(p) for p in pools.values())
    rows = []
    for k in range(steps):
        at = {**values, **{n: p[min(k, len(p) - 1)] for n, p in pools.items()}}
        try:
            r = cost(model, bind=at, input_shapes=overrides, assume_nonempty=assume_nonempty,
                     base_dir=os.path.dirname(os.path.abspath(model_path)))
        except BindError as e:
            rows.append({"sizes": at, "error": str(e)})
            continue
        rows.append({"sizes": at, "macs": r.macs, "flops": r.flops, "params": r.params,
                     "activation_bytes": r.activation_bytes, "activation_peak_bytes": r.activation_peak_bytes})
    if as_json:
        click.echo(json.dumps({"model": model_path, "sweep": [{k: (v if isinstance(v, (int, dict, str)) or v is None
                                                                     else str(v)) for k, v in row.items()}
                                                                 for row in rows]}, indent=2))
        return
    lines = [f"{model_path}: cost over --dims {', '.join(f'{n}={d.text()}' for n, d in swept.items())}"]
    for row in rows:
        where = ", ".join(f"{k}={v}" for k, v in row["sizes"].items())
        if "error" in row:
            lines.append(f"  {where}: {row['error']}")
        else:
            lines.append(f"  {where}: MACs {row['macs']}, FLOPs {row['flops']}, activations {row['activation_bytes']} bytes "
                         f"(peak {row['activation_peak_bytes']})")
    click.echo("\n".join(one_line(line) for line in lines))


def _spread(samples: tuple) -> tuple:
    """At most MAX_SWEEP of the sizes, the smallest and largest among them."""
    if len(samples) <= MAX_SWEEP:
        return samples
    step = (len(samples) - 1) / (MAX_SWEEP - 1)
    return tuple(samples[round(k * step)] for k in range(MAX_SWEEP))


@cli.command("check")
@click.argument("model_paths", metavar="MODEL...", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "junit"]), default="text", show_default=True,
              help="Report format: text (model by model as each is checked: its findings, the sizes it runs at "
                   "and a summary line), json, or JUnit XML.")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False),
              help="Write the report to this file (atomically) instead of standard output.")
@click.option("-j", "--jobs", "jobs", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Check this many models in parallel processes.")
@click.option("--strict", is_flag=True, help="Warnings (unknown dims, conditional shapes, ...) count as errors.")
@click.option("--assume-nonempty", is_flag=True, help="Assume no tensor is empty (see `shapeinfer infer --help`).")
@click.option("--include-empty", is_flag=True,
              help="Also report size warnings that only an empty tensor (a dim of 0) breaks; left out by default. "
                   "Unlike --assume-nonempty, which infers as if no tensor could be empty, this changes only which "
                   "warnings are shown.")
@click.option("--dims", "dims", multiple=True, metavar="NAME=SIZES",
              help="The sizes a dim is run at (repeatable): a range --dims seq=1..4096, one size --dims seq=128, "
                   "a set --dims batch=1,2,4. NAME is a dim the model's inputs name, matched literally. A failure "
                   "at those sizes is an error; one outside them is not reported.")
@click.option("--input-shape", "input_shape", multiple=True, metavar="NAME:DIMS",
              help="Fix an input's whole shape, e.g. --input-shape x:1,seq,768 or x=1,seq,768 (repeatable; NAME is "
                   "the model's input name, the longest that fits: tf2onnx's input:0 works).")
@click.option("-r", "--recursive", is_flag=True, help="A folder given as MODEL is searched for *.onnx in its "
              "subfolders too (without it, only the folder's own *.onnx files).")
@click.option("--ignore", "ignore", multiple=True, metavar="CODE",
              help="Leave out findings of this code (repeatable, or CODE,CODE), e.g. --ignore input-bound.")
@click.option("--baseline", "baseline", type=click.Path(dir_okay=False), metavar="FILE",
              help="Findings listed in FILE are accepted: not reported, not failing the run (as linters' "
                   "baselines); a new one still fails it. Write FILE with --update-baseline.")
@click.option("--update-baseline", is_flag=True,
              help="Write every finding of this run to the --baseline FILE (replacing it) and exit 0.")
def check_cmd(model_paths, fmt, output, jobs, strict, assume_nonempty, include_empty, dims, input_shape, recursive,
              ignore, baseline, update_baseline):
    """Validate MODEL... (files, or folders of *.onnx) for CI: onnx.checker, structure and full shape inference.

    Each model's input contract -- the sizes of its input dims at which it runs -- is printed
    ("runs when: 1 <= seq <= 64") and carried in JSON and JUnit; a dim declared dynamic that the
    graph pins to one size is an error, an upper bound or a divisibility a warning.

    \b
    Exit codes: 0 every model is clean (warnings allowed unless --strict),
                1 some model has an error, 2 usage error or an unreadable model.
    """
    from shapeinfer.checker import check_many, exit_code, render_json, render_junit, render_text
    from shapeinfer.errors import InputShapeError
    from shapeinfer.modelio.writer import resolve_destination, write_bytes

    from shapeinfer.checker.gate import Baseline, BaselineError, expand_models, ignored_codes

    if update_baseline and not baseline:
        raise click.UsageError("--update-baseline writes the file --baseline names: give --baseline FILE")
    try:
        model_paths = expand_models(model_paths, recursive)
        codes = ignored_codes(ignore)
        accepted = Baseline.read(baseline) if baseline and not update_baseline else None
    except BaselineError as e:
        raise click.UsageError(str(e)) from None
    dest = base_dest = None
    if output is not None:  # never a model checked, nor a data file one reads
        dest = resolve_destination(output, _files_check_reads(model_paths, output))
    if update_baseline:
        base_dest = resolve_destination(baseline, _files_check_reads(model_paths, baseline))
    stream = fmt == "text" and output is None and not update_baseline
    shown = [0]

    def done(k, report):  # (each model's lines as soon as it and those before it are checked)
        _gate(report, codes, accepted)
        if stream:
            click.echo(render_text([report]), nl=False)
        shown[0] += 1
        if len(model_paths) > 1 and _stderr_on_terminal():
            click.echo(f"\r[{shown[0]}/{len(model_paths)}] checked", nl=False, err=True)

    try:
        reports = check_many(list(model_paths), strict=strict, assume_nonempty=assume_nonempty,
                             include_empty=include_empty, jobs=jobs, dims=list(dims) or None, on_done=done,
                             input_shapes=list(input_shape) or None)
    except InputShapeError as e:
        hint = "--dims/--input-shape" if dims and input_shape else "--dims" if dims else "--input-shape"
        raise click.BadParameter(str(e), param_hint=hint) from None
    if len(model_paths) > 1 and _stderr_on_terminal():
        click.echo("", err=True)
    if dims and len(model_paths) > 1:  # (each model takes the dims it names; a name none uses is a typo)
        used = {n for r in reports for n in r.dims}
        unused = [d for d in dims if not any(d.startswith(f"{n}=") for n in used)]
        if unused:
            raise click.BadParameter(f"{unused[0]!r}: no model checked names that dim", param_hint="--dims")
    if update_baseline:
        written = Baseline.of(reports)
        write_bytes(base_dest, written.dumps().encode("utf-8"), ".tmp")
        click.echo(f"{len(written)} finding(s) of {len(reports)} model(s) written to {baseline} as accepted", err=True)
        raise SystemExit(0)
    if stream:
        raise SystemExit(exit_code(reports))
    text = {"text": render_text, "json": render_json, "junit": render_junit}[fmt](reports)
    if output:
        write_bytes(dest, text.encode("utf-8"), ".tmp")
        if fmt != "text":
            click.echo("".join(one_line(r.summary()) + "\n" for r in reports), nl=False, err=True)
    else:
        click.echo(text, nl=False)
    raise SystemExit(exit_code(reports))


def _gate(report, codes: frozenset, accepted) -> None:
    """Leave out of a report the findings of ignored codes and those the baseline accepts."""
    kept = []
    for f in report.findings:
        if f.code in codes:
            report.ignored += 1
        elif accepted is not None and accepted.takes(report.path, f):
            report.baselined += 1
        else:
            kept.append(f)
    report.findings = kept


def _stderr_on_terminal() -> bool:
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:
        return False


def _files_check_reads(model_paths, output: str) -> list:
    """(path, what) for the models and, where the report could be one, their external data files."""
    protected = [(p, "a model being checked") for p in model_paths]
    try:
        st = os.stat(output)
    except OSError:
        return protected  # nothing there yet: it cannot be a file anything reads
    real = os.path.realpath(output)
    for p in model_paths:
        folder = os.path.realpath(os.path.dirname(os.path.abspath(p)))
        if st.st_nlink > 1 or os.path.commonpath([folder, real]) == folder:
            protected += [(f, f"external data {p} reads") for f in _data_files_of(p)]
    return protected


def _data_files_of(path: str) -> list:
    from shapeinfer.errors import ModelLoadError
    from shapeinfer.modelio.load import load_model
    from shapeinfer.modelio.external import external_data_files

    try:
        return external_data_files(load_model(path), os.path.dirname(os.path.abspath(path)))
    except (ModelLoadError, OSError):  # not a readable model: check reports it; it names no data file
        return []


class Progress:
    """A status line on stderr once a run has taken more than a second: rewritten in place on
    a terminal (elapsed time and step), one line per step otherwise (CI logs)."""

    def __init__(self, enabled: bool = True, after: float = 1.0, stream=None):
        self.enabled, self.after = enabled, after
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.shown = False
        self.last = -1.0

    def __call__(self, msg: str) -> None:
        elapsed = time.monotonic() - self.started
        if not self.enabled or elapsed < self.after:
            return
        line = f"[{elapsed:6.1f}s] {msg}"
        if self.tty:
            self.stream.write("\r" + line[:100].ljust(100))
        elif elapsed - self.last >= 1.0:  # a log: at most a line a second
            self.stream.write(f"  ... {line}\n")
            self.last = elapsed
        else:
            return
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown and self.tty:
            self.stream.write("\r" + " " * 100 + "\r")
            self.stream.flush()


def main(argv=None) -> int:
    """Entry point: run the CLI, turning every error into one line and an exit code."""
    from shapeinfer.errors import (ExternalDataError, InputShapeError, ModelLoadError, ShapeInferenceError,
                                   UnsupportedModelError, UsageError, raise_mode)
    from shapeinfer.modelio.writer import OutputError

    args = sys.argv[1:] if argv is None else list(argv)
    # --debug (any command): an internal error shows its traceback instead of one line
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]
    if not args:  # bare `shapeinfer`: the usage, which is no error
        with click.Context(cli, info_name="shapeinfer") as ctx:
            click.echo(cli.get_help(ctx))
        return 0
    try:
        cli.main(args=args, prog_name="shapeinfer", standalone_mode=False)
    except SystemExit as e:
        return int(e.code or 0)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.ClickException as e:
        ctx_hint = ""
        if isinstance(e, click.UsageError) and e.ctx is not None:
            ctx_hint = f" (see '{e.ctx.command_path} --help')"
        _error(f"{e.format_message()}{ctx_hint}")
        return EXIT_USAGE
    except InputShapeError as e:
        _error(f"--input-shape: {e}")
        return EXIT_USAGE
    except OutputError as e:
        _error(f"{e}; nothing written")
        return EXIT_USAGE
    except (ShapeInferenceError, ExternalDataError) as e:
        _error(f"invalid model: {e}")
        return EXIT_INVALID_MODEL
    except ModelLoadError as e:
        _error(str(e))
        return EXIT_USAGE
    except (UsageError, UnsupportedModelError) as e:  # an unknown pass name; a model optimize declines
        _error(str(e))
        return EXIT_USAGE
    except OSError as e:
        _error(f"{e.filename or ''}: {e.strerror or e}")
        return EXIT_USAGE
    except Exception as e:  # the boundary: an internal error still gets one line, not a traceback
        if raise_mode() or debug:
            raise
        _error(f"internal error ({type(e).__name__}: {e}); please report it (--debug shows where)")
        return EXIT_INTERNAL
    return 0


def _error(message: str) -> None:
    """One line on stderr: ``message`` with whatever a name or a path in it holds escaped."""
    click.echo(f"error: {one_line(message)}", err=True)


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
