"""Reads torch.export archives (.pt2) as data: nothing in the file runs.

``torch.export.load`` trusts its file. Reading one it unpickles the weights
and constants saved with pickle (``weights_only=False``), custom and opaque
objects and the sample inputs (retrying with ``weights_only=False`` when the
safe unpickler refuses them), loads the AOTInductor libraries packaged
beside the program, parses the symbolic shape expressions with sympy (which
evaluates Python), imports the modules that pytree contexts name, resolves
node targets to any ``torch.*`` or ``operator.*`` attribute, and
``ExportedProgram.module()`` executes the input guards' Python source. A
model someone downloaded is not code they chose to run.

``read_exported_program`` reads the archive itself instead: the ZIP entries
through ``zipfile``, the weights and constants from their raw bytes (one
flat tensor per stored payload, so tensors that shared storage when saved
share it again: tied weights stay one tensor), and the program from its JSON
through torch's JSON deserializer, after checking everything that
deserializer or the crawl would evaluate. A file that cannot be read that
way is refused with an ``UntrustedFileError`` naming what it holds and the
opt-in (``trust_file=True``, ``--trust-file``), which hands the file to
``torch.export.load``. docs/cli.md ("Model files are data") lists the rules.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import os
import re
import sys
import zipfile
from collections.abc import Iterator
from typing import Any

import torch

# The opt-in, named in every refusal.
_OPT_IN = "only if you trust the file: --trust-file (trust_file=True) loads it with torch.export.load"


class UntrustedFileError(ValueError):
    """A model file that only code from the file itself could load."""


class MissingPytreeTypeError(ValueError):
    """A program whose inputs or outputs use a pytree type that no imported
    package has registered (transformers' output classes, for instance)."""


def _refuse(path: str, what: str) -> UntrustedFileError:
    return UntrustedFileError(f"{path}: {what}, and reading that would run code from the file; {_OPT_IN}")


# --- The archive ---------------------------------------------------------

# Entries (below the archive's root folder) this reader knows: written by
# torch.export.save, read as text, JSON or raw tensor bytes.
_KNOWN_ENTRIES = (
    re.compile(r"(archive_format|archive_version|byteorder|\.data/version|\.data/serialization_id)"),
    re.compile(r"models/[^/]+\.json"),
    re.compile(r"data/weights/[^/]+_weights_config\.json"),
    re.compile(r"data/weights/weight_\d+"),
    re.compile(r"data/constants/[^/]+_constants_config\.json"),
    re.compile(r"data/constants/tensor_\d+"),
    re.compile(r"data/sample_inputs/[^/]+\.pt"),  # a pickle: never read (NOTE below)
    re.compile(r"extra/.*"),  # the saver's extra files: never read
)


class _Archive:
    """The entries of a .pt2 ZIP file, by their name below its root folder,
    read on demand (a context manager: the file stays open inside it)."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self._zip = zipfile.ZipFile(path)
            infos = [info for info in self._zip.infolist() if not info.is_dir()]
            roots = {info.filename.split("/", 1)[0] for info in infos}
            if len(roots) != 1 or any("/" not in info.filename for info in infos):
                self._zip.close()
                raise ValueError("its entries are not under one root folder")
        except (OSError, zipfile.BadZipFile, ValueError, EOFError) as error:
            raise ValueError(f"{path} is not a torch.export program file (.pt2): {error}") from None
        root = roots.pop() + "/"
        self._infos = {info.filename[len(root) :]: info for info in infos}

    def __enter__(self) -> _Archive:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._zip.close()

    def names(self) -> list[str]:
        return list(self._infos)

    def _info(self, name: str) -> zipfile.ZipInfo:
        try:
            return self._infos[name]
        except KeyError:
            raise ValueError(f"{self.path} is not a torch.export program file (.pt2): it has no {name}") from None

    def read(self, name: str) -> bytes:
        try:
            return self._zip.read(self._info(name))
        except (OSError, zipfile.BadZipFile, EOFError) as error:
            raise ValueError(f"{self.path}: cannot read {name}: {error}") from None

    def size(self, name: str) -> int:
        return self._info(name).file_size

    def read_into(self, name: str, tensor: torch.Tensor) -> None:
        """The entry's bytes into ``tensor``'s memory (one copy, no
        intermediate buffer: weights can be most of the file)."""
        raw = tensor.view(torch.uint8)
        try:
            target = memoryview(raw.numpy()).cast("B")
        except (RuntimeError, ImportError):  # no numpy: one more copy
            data = self.read(name)
            if len(data) != raw.numel():
                raise ValueError(f"{self.path}: cannot read {name}: the entry is shorter than its header says") from None
            if data:
                raw.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))
            return
        try:
            with self._zip.open(self._info(name)) as stream:
                done = 0
                while done < len(target):
                    count = stream.readinto(target[done:])
                    if not count:
                        raise EOFError("the entry is shorter than its header says")
                    done += count
        except (OSError, zipfile.BadZipFile, EOFError) as error:
            raise ValueError(f"{self.path}: cannot read {name}: {error}") from None

    def json(self, name: str) -> Any:
        try:
            return json.loads(self.read(name).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"{self.path}: {name} is not valid JSON: {error}") from None


def _check_entries(archive: _Archive) -> None:
    for name in archive.names():
        if name.startswith("data/aotinductor/"):
            raise _refuse(archive.path, "it holds AOTInductor compiled code (a shared library loading would run)")
        if name in ("data/weights/model.pt", "data/constants/model.pt") or re.fullmatch(
            r"data/(weights|constants)/[^/]+\.pt", name
        ):
            raise _refuse(archive.path, f"it stores {name.split('/')[1]} in torch's legacy pickle format ({name})")
        if not any(pattern.fullmatch(name) for pattern in _KNOWN_ENTRIES):
            raise _refuse(archive.path, f"it holds an entry this reader does not know ({name})")
    if archive.read("archive_format").decode("utf-8", "replace").strip() != "pt2":
        raise ValueError(f"{archive.path} is not a torch.export program file (.pt2): its archive_format is not pt2")
    byteorder = archive.read("byteorder").decode("utf-8", "replace").strip() if "byteorder" in archive.names() else "little"
    if byteorder != sys.byteorder:
        raise ValueError(f"{archive.path}: its tensors are stored {byteorder}-endian, this machine is {sys.byteorder}-endian")


def _payload_tensors(archive: _Archive, directory: str, config: Any, kind: str) -> dict[str, torch.Tensor]:
    """The tensors a payload config describes, built from their raw bytes.
    Tensors stored in one payload file are views of one flat tensor."""
    from torch._export.serde import schema
    from torch._export.serde.serialize import (
        _dict_to_dataclass,
        deserialize_scalar_type,
        deserialize_size,
        deserialize_storage_offset,
        deserialize_stride,
    )

    payloads = _dict_to_dataclass(schema.PayloadConfig, config)
    flat: dict[str, torch.Tensor] = {}
    tensors: dict[str, torch.Tensor] = {}
    for name, meta in payloads.config.items():
        if meta.use_pickle:
            raise _refuse(archive.path, f"its {kind} {name!r} is saved as a pickle")
        if not re.fullmatch(r"(weight|tensor)_\d+", meta.path_name):
            raise _refuse(archive.path, f"its {kind} {name!r} is a {meta.path_name.rstrip('0123456789_')} object")
        tensor_meta = meta.tensor_meta
        if tensor_meta is None:
            raise ValueError(f"{archive.path}: its {kind} {name!r} has no tensor metadata")
        dtype = deserialize_scalar_type(tensor_meta.dtype)
        if meta.path_name not in flat:
            entry = directory + meta.path_name
            nbytes = archive.size(entry)
            element = torch.empty((), dtype=dtype).element_size()
            if nbytes % element:
                raise ValueError(f"{archive.path}: {entry} is not a whole number of {dtype} elements")
            flat[meta.path_name] = torch.empty(nbytes // element, dtype=dtype)
            archive.read_into(entry, flat[meta.path_name])
        base = flat[meta.path_name]
        if base.dtype != dtype:
            raise ValueError(f"{archive.path}: {directory}{meta.path_name} holds tensors of two dtypes")
        size = deserialize_size(tensor_meta.sizes)
        if base.numel() == 0 and math.prod(size) != 0:
            tensor = torch.zeros(size, dtype=dtype)  # the saver stores all-zero tensors empty
        else:
            try:
                tensor = torch.as_strided(
                    base, size, deserialize_stride(tensor_meta.strides),
                    deserialize_storage_offset(tensor_meta.storage_offset),
                )  # fmt: skip
            except (RuntimeError, AssertionError) as error:
                raise ValueError(f"{archive.path}: its {kind} {name!r} does not fit its stored bytes: {error}") from None
        if getattr(meta, "is_param", False):
            tensor = torch.nn.Parameter(tensor, requires_grad=tensor_meta.requires_grad)
        elif tensor_meta.requires_grad:
            tensor.requires_grad_(True)
        tensors[name] = tensor
    return tensors


# --- What torch's deserializer and ExportedProgram.module() evaluate -------

# NOTE [Symbolic expressions are sympy source]
# The deserializer turns each "expr_str" into an expression with
# sympy.sympify, which evaluates the text as Python in sympy's namespace
# (where `preview` runs LaTeX and `sympify` and `lambdify` compile more
# code). Expressions torch writes use a small vocabulary: sympy's and
# torch's expression classes, symbol names (s0, u3), integers, floats,
# flag keywords and arithmetic. Text outside it is refused before sympy
# sees it.
_EXPRESSION_TOKEN = re.compile(
    r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"
    r"|(?P<string>'[A-Za-z0-9_]*')|(?P<op>\*\*|//|[=!<>]=|[-+*/%(),=<>]))"
)
_SYMPY_NAMES = frozenset(
    "Symbol Dummy Integer Rational Float Add Mul Pow Max Min Mod Abs floor ceiling sqrt exp log "
    "Eq Ne Lt Le Gt Ge Equality Unequality StrictLessThan StrictGreaterThan LessThan GreaterThan "
    "And Or Not Xor true false BooleanTrue BooleanFalse Piecewise ExprCondPair "
    "Infinity NegativeInfinity oo zoo nan NaN One Zero NegativeOne Half "
    "True False None positive negative nonnegative nonpositive integer real finite evaluate precision".split()
)
_SYMBOL_NAME = re.compile(r"[a-z]{1,3}\d+")


def _torch_sympy_names() -> frozenset[str]:
    import sympy
    from torch.utils._sympy import functions

    return frozenset(
        name
        for name, value in vars(functions).items()
        if not name.startswith("_") and isinstance(value, type) and issubclass(value, sympy.Basic)
    ) | frozenset({"int_oo", "IntInfinity", "NegativeIntInfinity"})


def _check_expression(path: str, text: str, allowed: frozenset[str]) -> None:
    position = 0
    while position < len(text):
        match = _EXPRESSION_TOKEN.match(text, position)
        if match is None or match.end() == position:
            if text[position:].strip() == "":
                return
            raise _refuse(path, f"its symbolic expression {text[:80]!r} is not one torch writes")
        name = match.group("name")
        if name is not None and name not in allowed and not _SYMBOL_NAME.fullmatch(name):
            raise _refuse(path, f"its symbolic expression {text[:80]!r} names {name!r}")
        position = match.end()


def _objects(value: Any) -> Iterator[dict]:
    """Every JSON object inside ``value`` (itself included)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _walk(value: Any) -> Iterator[tuple[str, Any]]:
    """(key, value) of every member of every JSON object inside ``value``."""
    for item in _objects(value):
        yield from item.items()


def _check_treespec(path: str, text: Any) -> None:
    """A pytree spec (JSON text): every node type registered, and no context
    that would make pytree import a module (NOTE [Pytree contexts import])."""
    import torch.utils._pytree as pytree

    if not isinstance(text, str):
        return
    try:
        protocol, spec = json.loads(text)
    except (ValueError, TypeError):
        raise ValueError(f"{path}: a pytree spec in the program is not valid JSON") from None
    stack = [spec]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        type_name = node.get("type")
        if type_name is not None and type_name not in pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE:
            package = str(type_name).split(".", 1)[0]
            raise MissingPytreeTypeError(
                f"{path}: the program's inputs or outputs are a {type_name}, a pytree type no imported package "
                f"registered: import {package} first (python -m torchscan_dispatch --import {package} ...)"
            )
        context = node.get("context")
        if isinstance(context, str):
            try:
                decoded = json.loads(context)
            except ValueError:
                decoded = None
            # NOTE [Pytree contexts import]
            # An enum in a context ({"__enum__": ..., "fqn": "module:Class"})
            # and a defaultdict's factory ({"default_factory_module": ...})
            # make pytree import the module they name. Only modules this
            # process has already imported are accepted: reading a file never
            # imports anything.
            for key, member in _walk(decoded):
                if key in ("fqn", "default_factory_module") and isinstance(member, str):
                    module = member.partition(":")[0]
                    if module not in sys.modules:
                        raise _refuse(path, f"a pytree context in it imports the module {module!r}")
        stack.extend(node.get("children_spec") or [])


# NOTE [Input guards are Python source]
# ExportedProgram.module() compiles the program's guards_code (Python
# comparisons of input sizes, such as "L['x'].size()[0] <= 64") with exec,
# in a namespace that holds torch. Only comparisons and arithmetic of
# integers, of L's sizes and strides and of math's functions are accepted.
_GUARD_NODES = (
    ast.Expression, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.BinOp, ast.Constant, ast.Name, ast.Load,
    ast.Subscript, ast.Attribute, ast.Call, ast.Tuple, ast.Slice,
    ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod,
    ast.Pow, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
)  # fmt: skip
_GUARD_NAMES = frozenset({"L", "math", "inf", "IsNonOverlappingAndDenseIndicator", "cast_symbool_to_symint_guardless"})
_GUARD_TENSOR_ATTRIBUTES = frozenset({"size", "stride", "storage_offset", "dim", "numel", "shape"})


def _check_guard(path: str, code: Any) -> None:
    def refuse() -> UntrustedFileError:
        return _refuse(path, f"its input guard {str(code)[:80]!r} is not a comparison of input sizes")

    if not isinstance(code, str):
        raise refuse()
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError:
        raise refuse() from None
    for node in ast.walk(tree):
        if not isinstance(node, _GUARD_NODES):
            raise refuse()
        if isinstance(node, ast.Name) and node.id not in _GUARD_NAMES:
            raise refuse()
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str, type(None))):
            raise refuse()
        if isinstance(node, ast.Attribute):
            on_math = isinstance(node.value, ast.Name) and node.value.id == "math"
            if node.attr.startswith("_") or not (on_math or node.attr in _GUARD_TENSOR_ATTRIBUTES):
                raise refuse()
        if isinstance(node, ast.Call) and not isinstance(node.func, (ast.Attribute, ast.Name)):
            raise refuse()


_TARGET_NAME = re.compile(
    r"torch\.ops\.[A-Za-z_][\w]*\.[A-Za-z_]\w*(\.[A-Za-z_]\w*)?"
    r"|torch\._?sym_\w+|_operator\.[a-z_]+|math\.[a-z]\w*"
)


def _check_target_name(path: str, target: str) -> None:
    """A node's target text, before the deserializer resolves it (NOTE
    [Node targets are attribute paths]); _check_targets checks what it
    resolved to."""
    if not _TARGET_NAME.fullmatch(target) or (
        target.startswith("_operator.") and target.partition(".")[2] not in _OPERATOR_FUNCTIONS
    ):
        raise _refuse(path, f"its graph calls {target[:80]!r}")


def _check_program_document(path: str, document: Any) -> None:
    allowed = _SYMPY_NAMES | _torch_sympy_names()
    for node in _objects(document):
        if isinstance(node.get("target"), str) and "inputs" in node:
            _check_target_name(path, node["target"])
        for key, value in node.items():
            if key == "expr_str":
                if not isinstance(value, str):
                    raise ValueError(f"{path}: a symbolic expression in the program is not text")
                _check_expression(path, value, allowed)
            elif key in ("in_spec", "out_spec"):
                _check_treespec(path, value)
    if isinstance(document, dict):
        for name in document.get("range_constraints") or {}:
            _check_expression(path, str(name), allowed)
        for code in document.get("guards_code") or []:
            _check_guard(path, code)


# NOTE [Node targets are attribute paths]
# The deserializer resolves a node's target text ("torch.ops.aten.mm.default",
# "_operator.getitem") by getattr from torch, operator or math, so a crafted
# target could be any function reachable from torch (torch.save, or os
# through a submodule), which the crawl would then call. Accepted targets:
# dispatcher operators (OpOverload), higher-order operators, torch's sym_*
# functions, and the pure functions of operator and math.
_OPERATOR_FUNCTIONS = frozenset(
    "add sub mul truediv floordiv mod pow neg pos abs eq ne lt le gt ge and_ or_ xor not_ invert "
    "lshift rshift getitem truth index".split()
)


def _allowed_target(target: Any) -> bool:
    if isinstance(target, (torch._ops.OpOverload, torch._ops.HigherOrderOperator)):
        return True
    module = getattr(target, "__module__", None)
    name = getattr(target, "__name__", "")
    if target is getattr(operator, name, None):
        return name in _OPERATOR_FUNCTIONS
    if target is getattr(math, name, None):
        return not name.startswith("_")
    return module in ("torch", "torch.fx.experimental.sym_node") and name.startswith(("sym_", "_sym_"))


def _check_targets(path: str, graph_module: torch.fx.GraphModule) -> None:
    for module in graph_module.modules():
        graph = getattr(module, "graph", None)
        if not isinstance(graph, torch.fx.Graph):
            continue
        for node in graph.nodes:
            if node.op == "call_function" and not _allowed_target(node.target):
                raise _refuse(path, f"its graph calls {getattr(node.target, '__name__', node.target)!r}")
            if node.op in ("call_method", "call_module"):
                raise _refuse(path, f"its graph has a {node.op} node ({node.target})")


def read_exported_program(path: str | os.PathLike[str]) -> torch.export.ExportedProgram:
    """The program of a .pt2 file (torch.export.save), read as data.

    Raises ``UntrustedFileError`` (a ValueError) for a file that only code
    from the file could load, ``MissingPytreeTypeError`` for a program whose
    inputs or outputs need a package imported first, and ValueError for a
    file that is not a .pt2 program; each message is one line naming the file.
    """
    path = os.fspath(path)
    from torch._export.serde import schema
    from torch._export.serde.serialize import ExportedProgramDeserializer, _dict_to_dataclass

    with _Archive(path) as archive:
        _check_entries(archive)
        if "models/model.json" not in archive.names():
            raise ValueError(f"{path} is not a torch.export program file (.pt2): it holds no program named 'model'")
        document = archive.json("models/model.json")
        _check_program_document(path, document)
        try:
            state_dict = _payload_tensors(
                archive, "data/weights/", archive.json("data/weights/model_weights_config.json"), "weight"
            )
            constants = _payload_tensors(
                archive, "data/constants/", archive.json("data/constants/model_constants_config.json"), "constant"
            )
        except (UntrustedFileError, ValueError):
            raise
        except Exception as error:  # noqa: BLE001 - a malformed config (bad dtype code, missing field)
            raise ValueError(f"{path}: its weights or constants are malformed: {type(error).__name__}: {error}") from None
    try:
        serialized = _dict_to_dataclass(schema.ExportedProgram, document)
        # NOTE: the sample inputs are a pickle; the crawl never needs them
        # (it builds inputs from the graph's own metadata), so none are read.
        program = ExportedProgramDeserializer().deserialize(serialized, state_dict, constants, None)
    except (UntrustedFileError, MissingPytreeTypeError):
        raise
    except Exception as error:  # noqa: BLE001 - whatever the deserializer raises means a malformed program
        first = str(error).strip().splitlines()
        raise ValueError(
            f"{path} is not a readable torch.export program: {type(error).__name__}: {first[0] if first else ''}"
        ) from None
    _check_targets(path, program.graph_module)
    return program
