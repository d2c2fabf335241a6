"""``python -m torchscan_dispatch``: the ``torchscan`` command line, in the
Python process, for what only Python can load.

    python -m torchscan_dispatch MODEL.pt --input-shape 3,224,224 [options]
        a TorchScript file (torch.jit.save of a scripted or traced module)
    python -m torchscan_dispatch MODEL.pt2 [--input-shape 3,224,224] [options]
        a torch.export program (torch.export.save); without --input-shape,
        inputs of the shapes it was exported with
    python -m torchscan_dispatch torchvision.models:resnet50 --kwarg num_classes=10 --input-shape 3,224,224
        the module a factory returns (an nn.Module, a TorchScript module or
        an ExportedProgram), called with the --kwarg values
    python -m torchscan_dispatch compare BEFORE.json AFTER.json
        compare two reports
    python -m torchscan_dispatch roofline REPORT.json --device-model NAME [--json -|PATH] [--html -|PATH]
        a FlopReport's (or a job report's) roofline on a device of the device
        table: the listing and the JSON of the C++ command, byte for byte

Options, outputs and exit codes are the C++ command's (tools/torchscan_main.cc,
docs/cli.md): the same table with the diagnostics listed, the same JSON, the
same --html and --folded files, and 0 success, 1 incomplete under --strict
(the report is still printed and written), 2 bad usage or input, 3 the model
raised on the input. The commands and options are declared once, in
tools/cli_model.h: the library's parser reads this command line too
(parse_command_line), and writes its --help and usage errors.
"""

from __future__ import annotations

import ast
import functools
import importlib
import json
import sys
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TextIO

import torch
from torch import nn

from torchscan_dispatch._captured_output import captured_torch_output
from torchscan_dispatch._imports import call_factory
from torchscan_dispatch._library import hooks
from torchscan_dispatch.crawler import crawl_module, format_summary
from torchscan_dispatch.exported import MissingPytreeTypeError, UntrustedFileError, load_exported_program
from torchscan_dispatch.render import list_diagnostics
from torchscan_dispatch.report import IncompleteAnalysisError, compare_reports

__all__ = ["main"]

OK, INCOMPLETE, BAD_INPUT, MODEL_FAILED = 0, 1, 2, 3

class UsageError(Exception):
    """Bad usage or input: exit status 2."""


@functools.cache
def _native() -> Any:
    """The library's extension module, where the command-line model, the
    shape reader and the cause-line rule are (python/operators/cli_functions.h)."""
    return hooks()


def _parse_shapes(text: str) -> list[tuple[int, ...]]:
    """tools/cli_inputs.h's ParseInputShapes: ';' between inputs, ',' between
    dimensions, each a non-negative decimal integer (blanks around it allowed)."""
    try:
        return [tuple(shape) for shape in _native().parse_input_shapes(text)]
    except ValueError as error:
        raise UsageError(str(error)) from None


def _parse_dtypes(text: str) -> list[torch.dtype]:
    """tools/cli_inputs.h's ParseDtypes: names ("float32", "torch.half") with
    ';' between inputs."""
    try:
        return [getattr(torch, name) for name in _native().parse_dtypes(text)]
    except ValueError as error:
        raise UsageError(str(error)) from None


def _parse_device(text: str) -> torch.device:
    try:
        return torch.device(text)
    except RuntimeError as error:
        raise UsageError(f"bad --device {text!r}: {error}") from None


def _parse_kwarg(text: str) -> tuple[str, Any]:
    name, separator, value = text.partition("=")
    if not separator or not name.isidentifier():
        raise UsageError(f"bad --kwarg {text!r}: expected NAME=VALUE (num_classes=10)")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value  # a bare word is a string: weights=None is None, arch=tiny is "tiny"


def _parse(argv: list[str]) -> SimpleNamespace:
    """tools/cli_model.h's parse result of ``argv``: an attribute per option
    (its default when absent), ``command`` and ``inputs``."""
    try:
        return SimpleNamespace(**_native().parse_command_line("python", argv))
    except ValueError as error:
        raise UsageError(str(error)) from None


def _write(path: str, text: str, out: TextIO) -> None:
    if path == "-":
        out.write(text)
        return
    try:
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror}") from None


def _write_views(result: tuple[str, str, str | None], out: TextIO, err: TextIO) -> None:
    """Writes what tools/cli_outputs.h's view writer (write_analysis_views,
    write_compare_views) sent to standard output and its notes; its error
    is a usage error."""
    text, notes, error = result
    out.write(text)
    err.write(notes)
    if error is not None:
        raise UsageError(error)


def _load_file(path: Path, args: SimpleNamespace, err: TextIO) -> Any:
    """The model in a file: a .pt2 read as data (or by torch with
    --trust-file), else a TorchScript file. What torch prints while loading
    is shown only with --verbose; a failure is one line naming the file."""
    captured = None
    try:
        with captured_torch_output() as captured:
            return _read_model_file(path, args)
    finally:
        if args.verbose and captured is not None:
            for line in captured.lines:
                err.write(f"torchscan: torch said: {line}\n")


def _read_model_file(path: Path, args: SimpleNamespace) -> Any:
    try:
        if path.suffix == ".pt2":
            return load_exported_program(path, trust_file=args.trust_file)
        try:
            return torch.jit.load(str(path), map_location="cpu")
        except Exception as error:  # noqa: BLE001 - any loader failure means the same to the user
            script_error = error
        if not zipfile.is_zipfile(path):  # what the C++ command says
            raise UsageError(
                f"{path} is not a TorchScript model file (torch.jit.save): {one_line_cause(str(script_error))}"
            )
        try:  # a torch.export file under another suffix
            return load_exported_program(path, trust_file=args.trust_file)
        except (UntrustedFileError, MissingPytreeTypeError):
            raise
        except (OSError, ValueError):
            pass
        raise UsageError(
            f"{path} is not a TorchScript model file (torch.jit.save) or a torch.export program (.pt2): "
            f"{one_line_cause(str(script_error))}"
        )
    except (OSError, ValueError) as error:
        raise UsageError(str(error)) from None


def one_line_cause(message: str) -> str:
    """The line of an error message that says what went wrong: the last
    non-blank line of a TorchScript interpreter error (its traceback comes
    first), else the first non-blank line; tools/cli_errors.h's OneLineCause,
    so that both command lines print the same line."""
    return _native().one_line_cause(message)


def _load_model(target: str, args: SimpleNamespace, err: TextIO) -> tuple[Any, str]:
    """(the model, the HTML page's title)."""
    for module in args.imports:
        try:
            importlib.import_module(module)
        except Exception as error:  # noqa: BLE001 - any import failure means the same to the user
            raise UsageError(f"--import {module}: {type(error).__name__}: {one_line_cause(str(error))}") from None
    path = Path(target)
    if path.is_file() or (":" not in target and not args.kwarg):
        if args.kwarg:
            raise UsageError("--kwarg applies to a factory (package.module:callable), not to a model file")
        if not path.exists():
            raise UsageError(f"no such file: {target}")
        return _load_file(path, args, err), path.name
    kwargs = dict(_parse_kwarg(item) for item in args.kwarg)
    try:
        model = call_factory(target, kwargs)
    except ValueError as error:
        if str(error).startswith((f"{target!r} ", "cannot import ", f"{target.partition(':')[0]!r} has no")):
            raise UsageError(str(error)) from None
        raise
    if not isinstance(model, (nn.Module, torch.export.ExportedProgram)):
        raise UsageError(f"{target} returned a {type(model).__name__}, not an nn.Module or ExportedProgram")
    if args.device and isinstance(model, nn.Module) and not isinstance(model, torch.jit.ScriptModule):
        # The command built this module: it goes where --device says (meta:
        # no memory for its weights), so the generated inputs follow it.
        model = model.to(_parse_device(args.device))
    return model, target


def _analyse(args: SimpleNamespace, out: TextIO, err: TextIO) -> int:
    dtypes = _parse_dtypes(args.dtype) if args.dtype else None
    device = _parse_device(args.device) if args.device else None
    shapes = _parse_shapes(args.input_shape) if args.input_shape else None
    model, title = _load_model(args.inputs[0], args, err)
    if shapes is None and not isinstance(model, torch.export.ExportedProgram):
        raise UsageError("pass --input-shape (without the batch dimension, e.g. 3,224,224)")
    if shapes is None and dtypes is not None:
        raise UsageError("--dtype applies to the generated inputs of --input-shape")
    if dtypes is not None and len(dtypes) not in (1, len(shapes)):
        raise UsageError(f"--dtype gives {len(dtypes)} dtypes for {len(shapes)} inputs")
    dtype = None if dtypes is None else (dtypes[0] if len(dtypes) == 1 else dtypes)

    incomplete = None
    try:
        report = crawl_module(
            model,
            None if shapes is None else (shapes[0] if len(shapes) == 1 else shapes),
            dtype,
            device=device,
            strict=args.strict,
            mode=args.mode,
        )
    except IncompleteAnalysisError as error:
        report, incomplete = error.report, str(error)
    except (TypeError, ValueError) as error:
        if "input_shape" in str(error) or "dtype" in str(error):
            raise UsageError(str(error)) from None
        return _model_failed(error, model, err)
    except Exception as error:  # noqa: BLE001 - whatever the model raises, as the C++ command reports it
        return _model_failed(error, model, err)

    to_stdout = "-" in (args.json, args.html, args.folded)
    if not to_stdout:
        table = format_summary(
            report,
            max_depth=None if args.max_depth < 0 else args.max_depth,
            receptive_field=args.receptive_field,
            effective_rf_stats=args.effective_rf_stats,
        )
        out.write(list_diagnostics(report, summary=table + "\n"))
    if args.json:
        _write(args.json, json.dumps(report, indent=2) + "\n", out)
    if args.html or args.folded:
        _write_views(_native().write_analysis_views(report, args.html, args.folded, title), out, err)
    if incomplete is not None:
        err.write(f"torchscan: {incomplete}\n")
        return INCOMPLETE
    return OK


def _model_failed(error: BaseException, model: Any, err: TextIO) -> int:
    cause = one_line_cause(str(error))
    if not isinstance(model, torch.jit.ScriptModule):
        # A Python model's exception: its type says as much as its text. A
        # TorchScript model's error is the C++ command's, word for word.
        cause = f"{type(error).__name__}: {cause}"
    err.write(f"torchscan: the model raised on the input: {cause}\n")
    return MODEL_FAILED


def _read_report(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"{path}: invalid JSON: {error}") from None


def _compare(args: SimpleNamespace, native: Any, out: TextIO, err: TextIO) -> int:
    before, after = _read_report(args.inputs[0]), _read_report(args.inputs[1])
    try:
        diff = compare_reports(before, after)
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None
    if args.html or args.folded:
        title = f"{Path(args.inputs[0]).name} \u2192 {Path(args.inputs[1]).name}"
        _write_views(native.write_compare_views(diff, before, after, args.html, args.folded, title), out, err)
    if args.json:
        _write(args.json, json.dumps(diff, indent=2) + "\n", out)
    if "-" in (args.json, args.html, args.folded):
        return OK
    out.write(native.compare_listing(diff))  # tools/cli_outputs.h's CompareListing
    return OK


def _roofline(args: SimpleNamespace, native: Any, out: TextIO, err: TextIO) -> int:
    report = _read_report(args.inputs[0])
    try:
        # The C++ command's listing and JSON (report/render/roofline_listing.h).
        listing, text = native.roofline_listing(report, args.device_model)
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None
    if args.html:
        title = f"{args.inputs[0]} on {args.device_model}"
        _write_views(native.write_roofline_page(report, args.device_model, args.html, title), out, err)
    if "-" not in (args.json, args.html):
        out.write(listing)
    if args.json:
        _write(args.json, text, out)
    return OK


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Runs the command line on ``argv`` (``sys.argv[1:]`` by default);
    returns the exit status."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    native = _native()
    try:
        args = _parse(list(sys.argv[1:] if argv is None else argv))
        if args.help:
            out.write(native.command_line_help("python"))
            return OK
        with warnings.catch_warnings():
            # Model code's warnings (deprecations, tracer notes) are not the report's.
            warnings.simplefilter("ignore")
            if args.command == "compare":
                return _compare(args, native, out, err)
            if args.command == "roofline":
                return _roofline(args, native, out, err)
            return _analyse(args, out, err)
    except UsageError as error:
        err.write(f"torchscan: {error}\n")
        return BAD_INPUT


if __name__ == "__main__":  # pragma: no cover - python -m torchscan_dispatch.cli
    sys.exit(main())

