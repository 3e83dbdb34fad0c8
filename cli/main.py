"""``shapeinfer``: thin click commands over the library.

``shapeinfer MODEL`` is the same as ``shapeinfer infer MODEL``; the group leaves room for more
commands beside ``infer``. Errors become one line on stderr and an exit code in :func:`main`:
1 for an invalid model, 2 for bad usage or an unreadable file.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

import click

EXIT_INVALID_MODEL = 1
EXIT_USAGE = 2


class DefaultGroup(click.Group):
    """A group whose first argument, when it is not a command name, goes to ``infer``."""

    default_command = "infer"

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
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
    """


def _parse_input_shape(values) -> dict:
    out = {}
    for item in values:
        if "=" not in item:
            raise click.BadParameter(f"{item!r}: expected NAME=d0,d1,... (for example x=1,seq,768)", param_hint="--input-shape")
        name, dims = item.split("=", 1)
        parsed = []
        for d in (dims.split(",") if dims.strip() else []):
            d = d.strip()
            if not d:
                raise click.BadParameter(f"{item!r}: empty dim", param_hint="--input-shape")
            if d.lstrip("-").isdigit():
                if int(d) < 0:
                    raise click.BadParameter(f"{item!r}: dims cannot be negative", param_hint="--input-shape")
                parsed.append(int(d))
            else:
                from shapeinfer.symbolic import ParseError, parse

                try:
                    parse(d)
                except ParseError as e:
                    raise click.BadParameter(f"{item!r}: {e}", param_hint="--input-shape") from None
                parsed.append(d)
        out[name.strip()] = parsed
    return out


def write_atomically(data: bytes, path: str, suffix: str = "") -> None:
    """Write to a temporary file beside ``path`` and rename it into place only on success."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".shapeinfer-", suffix=suffix, dir=folder)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # the mode a plain open() would give, not mkstemp's 0600
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_model_atomically(model, path: str) -> None:
    write_atomically(model.SerializeToString(), path, ".onnx")


@cli.command("infer")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=True))
@click.option("--all", "all_tensors", is_flag=True, help="List every tensor, not only Expand/Reshape/Tile.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False), help="Write the annotated model here.")
@click.option(
    "--input-shape",
    "input_shape",
    multiple=True,
    metavar="NAME=DIMS",
    help="Override an input's shape, e.g. --input-shape x=1,seq,768 (repeatable).",
)
@click.option(
    "--assume-nonempty",
    is_flag=True,
    help="Assume no tensor is empty (every dim of every tensor is at least 1); reported in the output.",
)
def infer_cmd(model_path, all_tensors, as_json, output, input_shape, assume_nonempty):
    """Infer and print the shapes of MODEL."""
    import shapeinfer
    from shapeinfer.checker import validate_structure

    from .render import render_table

    overrides = _parse_input_shape(input_shape)
    model = shapeinfer.load_model(model_path)
    validate_structure(model)  # optimize does this in its API; infer's API takes partial graphs
    known_inputs = {i.name for i in model.graph.input}
    for name in overrides:
        if name not in known_inputs:
            raise click.BadParameter(
                f"the model has no input named {name!r} (inputs: {', '.join(sorted(known_inputs)) or 'none'})",
                param_hint="--input-shape",
            )
    model_dir = os.path.dirname(os.path.abspath(model_path))
    result = shapeinfer.infer(model, input_shapes=overrides, assume_nonempty=assume_nonempty, base_dir=model_dir)
    if output:
        if os.path.abspath(output) == os.path.abspath(model_path):
            raise click.BadParameter("refusing to overwrite the input model", param_hint="-o")
        from shapeinfer.external import relocate_external_data

        annotated = shapeinfer.annotate(model, result, overrides)
        relocate_external_data(annotated, model_dir, os.path.dirname(os.path.abspath(output)))
        write_model_atomically(annotated, output)
    if as_json:
        data = result.to_dict(all_tensors=all_tensors)
        data["model"] = model_path
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(render_table(result, model_path, all_tensors=all_tensors))
        if output:
            click.echo(f"annotated model written to {output}")


def _names(value):
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


@cli.command("optimize")
@click.argument("model_path", metavar="MODEL", type=click.Path(dir_okay=True))
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False), help="Where to write the optimised model.")
@click.option("--passes", "passes", metavar="P1,P2", help="Run only these passes (comma-separated).")
@click.option("--skip", "skip", metavar="P1,P2", help="Do not run these passes.")
@click.option("--explain", is_flag=True, help="List each Reshape/Expand/Tile that was kept and why.")
@click.option("--verify", "do_verify", is_flag=True, help="Run both models on random inputs at 3 bindings; exit 1 on any difference.")
@click.option("--fold-budget", "fold_budget", type=click.IntRange(min=0), default=None, metavar="BYTES",
              help="Largest folded constant allowed beyond its inputs' size (default 16384).")
@click.option("--assume-nonempty", is_flag=True, help="Assume no tensor is empty (allows more rewrites); reported.")
@click.option("--ignore-signed-zero", is_flag=True,
              help="Also drop x + 0.0, which turns -0.0 into +0.0 (as onnxsim/onnxslim do); reported.")
@click.option("--bind", "bind", multiple=True, metavar="SYMBOL=V1,V2,V3",
              help="Sizes --verify gives a symbolic dim (repeatable), e.g. --bind height=32,64,48.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def optimize_cmd(model_path, output, passes, skip, explain, do_verify, fold_budget, assume_nonempty,
                 ignore_signed_zero, bind, as_json):
    """Simplify MODEL (constant folding, Reshape/Expand/Tile rewrites) and write it to OUTPUT."""

    import shapeinfer
    from shapeinfer.external import relocate_external_data
    from shapeinfer.fold.folder import DEFAULT_BUDGET_BYTES
    from shapeinfer.optimizer import DEFAULT_PASSES, OptimizeReport, optimize

    from .render import render_optimize

    if os.path.abspath(output) == os.path.abspath(model_path):
        raise click.BadParameter("refusing to overwrite the input model", param_hint="-o")
    from shapeinfer.passes import REGISTRY

    for name in (_names(passes) or []) + (_names(skip) or []):
        if name not in REGISTRY:
            raise click.BadParameter(f"unknown pass {name!r} (passes: {', '.join(DEFAULT_PASSES)})", param_hint="--passes/--skip")
    values = {}
    for item in bind:
        name, _, vals = item.partition("=")
        try:
            values[name.strip()] = [int(v) for v in vals.split(",") if v.strip()]
        except ValueError:
            values[name.strip()] = []
        if not name.strip() or not values[name.strip()] or min(values[name.strip()]) < 0:
            raise click.BadParameter(f"{item!r}: expected SYMBOL=V1,V2,... with sizes >= 0", param_hint="--bind")
    model = shapeinfer.load_model(model_path)
    progress = Progress(enabled=not as_json)
    report = OptimizeReport()
    optimized = optimize(model, passes=_names(passes), skip=_names(skip) or (),
                         fold_budget=DEFAULT_BUDGET_BYTES if fold_budget is None else fold_budget,
                         assume_nonempty=assume_nonempty, ignore_signed_zero=ignore_signed_zero,
                         progress=progress, report=report)
    verdict = None
    if do_verify:
        from shapeinfer.verify import bindings_for, verify

        progress("verifying with onnxruntime")
        verdict = verify(model, optimized, bindings=bindings_for(model, values=values))
    progress.done()
    if verdict is not None and not verdict.ok:
        click.echo(render_optimize(report, model_path, output, explain, verdict) if not as_json else json.dumps(
            {**report.as_dict(), "verify": [[b, r] for b, r in verdict.runs]}, indent=2))
        raise SystemExit(EXIT_INVALID_MODEL)
    relocate_external_data(optimized, os.path.dirname(os.path.abspath(model_path)), os.path.dirname(os.path.abspath(output)))
    write_model_atomically(optimized, output)
    if as_json:
        data = report.as_dict()
        if verdict is not None:
            data["verify"] = [[b, r] for b, r in verdict.runs]
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(render_optimize(report, model_path, output, explain, verdict))


@cli.command("check")
@click.argument("model_paths", metavar="MODEL...", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "junit"]), default="text", show_default=True,
              help="Report format: text (findings, then one summary line per model), json, or JUnit XML.")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False),
              help="Write the report to this file (atomically) instead of standard output.")
@click.option("-j", "--jobs", "jobs", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Check this many models in parallel processes.")
@click.option("--strict", is_flag=True, help="Warnings (unknown dims, conditional shapes, ...) count as errors.")
@click.option("--assume-nonempty", is_flag=True, help="Assume no tensor is empty (see `shapeinfer infer --help`).")
def check_cmd(model_paths, fmt, output, jobs, strict, assume_nonempty):
    """Validate MODEL... for CI: onnx.checker, structure and full shape inference.

    \b
    Exit codes: 0 every model is clean (warnings allowed unless --strict),
                1 some model has an error, 2 usage error or an unreadable model.
    """
    from shapeinfer.checker import check_many, exit_code, render_json, render_junit, render_text

    if output is not None and any(os.path.abspath(output) == os.path.abspath(p) for p in model_paths):
        raise click.BadParameter("refusing to overwrite an input model with the report", param_hint="-o")
    reports = check_many(list(model_paths), strict=strict, assume_nonempty=assume_nonempty, jobs=jobs)
    text = {"text": render_text, "json": render_json, "junit": render_junit}[fmt](reports)
    if output:
        write_atomically(text.encode("utf-8"), output, ".tmp")
        if fmt != "text":
            click.echo("".join(r.summary() + "\n" for r in reports), nl=False, err=True)
    else:
        click.echo(text, nl=False)
    raise SystemExit(exit_code(reports))


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
    from shapeinfer.errors import ExternalDataError, ModelLoadError, ShapeInferenceError

    try:
        cli.main(args=argv, prog_name="shapeinfer", standalone_mode=False)
    except SystemExit as e:
        return int(e.code or 0)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.ClickException as e:
        ctx_hint = ""
        if isinstance(e, click.UsageError) and e.ctx is not None:
            ctx_hint = f" (see '{e.ctx.command_path} --help')"
        click.echo(f"error: {e.format_message()}{ctx_hint}", err=True)
        return EXIT_USAGE
    except ShapeInferenceError as e:
        click.echo(f"error: invalid model: {e}", err=True)
        return EXIT_INVALID_MODEL
    except ExternalDataError as e:
        click.echo(f"error: invalid model: {e}", err=True)
        return EXIT_INVALID_MODEL
    except ModelLoadError as e:
        click.echo(f"error: {e}", err=True)
        return EXIT_USAGE
    except ValueError as e:  # e.g. an unknown pass name given through the API path
        click.echo(f"error: {e}", err=True)
        return EXIT_USAGE
    except OSError as e:
        click.echo(f"error: {e.filename or ''}: {e.strerror or e}", err=True)
        return EXIT_USAGE
    except Exception as e:  # an internal error still gets one line, not a traceback
        click.echo(f"error: internal error ({type(e).__name__}: {e}); please report it", err=True)
        return 3
    return 0


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
