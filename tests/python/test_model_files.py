"""Model files are data: reading a .pt2 never runs code from it, tied
weights are counted once after any loader, and a program whose pytree types
come from a package names that package.

The crafted files are real torch.export.save archives with one entry
rewritten the way an attacker would: each payload would create a marker
file if it ran. Without the opt-in the marker never appears and the command
exits 2 with one line naming the opt-in; with it, torch's own loader runs
(and so does the payload: that is what trusting a file means).
"""

import io
import json
import os
import pickle
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import torch
from torch import Tensor, nn

import torchscan_dispatch
from torchscan_dispatch._imports import prepare_torchvision
from torchscan_dispatch.cli import main
from torchscan_dispatch.exported import MissingPytreeTypeError, UntrustedFileError, load_exported_program

ROOT = Path(__file__).resolve().parents[2]


def in_process(*args):
    out, err = io.StringIO(), io.StringIO()
    status = main([str(arg) for arg in args], out, err)
    return status, out.getvalue(), err.getvalue()


def python_cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "torchscan_dispatch", *map(str, args)],
        capture_output=True, text=True, check=False, timeout=300, cwd=cwd,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), *sys.path])},
    )  # fmt: skip


class WithConstant(nn.Module):
    """A linear layer plus a plain tensor attribute (a lifted constant)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 3)
        self.offset = torch.ones(3)

    def forward(self, x):
        return self.linear(x) + self.offset


def saved_program(tmp_path: Path, module: nn.Module | None = None, name: str = "model.pt2") -> Path:
    path = tmp_path / name
    module = module or WithConstant()
    torch.export.save(torch.export.export(module, (torch.rand(2, 4),)), path)
    return path


def rewritten(path: Path, edit) -> Path:
    """A copy of the archive with ``edit(entries)`` applied to its entries
    (names below the root folder -> bytes)."""
    with zipfile.ZipFile(path) as archive:
        root = archive.namelist()[0].split("/", 1)[0] + "/"
        entries = {name[len(root):]: archive.read(name) for name in archive.namelist()}
    edit(entries)
    out = path.with_name("crafted_" + path.name)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name, data in entries.items():
            archive.writestr(root + name, data)
    return out


class _CreatesMarker:
    """Unpickling this creates the marker file (an ordinary pickle gadget)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def pickled_constant(marker: Path):
    def edit(entries):
        config = json.loads(entries["data/constants/model_constants_config.json"])
        (name, meta), = config["config"].items()
        meta["use_pickle"] = True
        entries["data/constants/model_constants_config.json"] = json.dumps(config).encode()
        entries["data/constants/" + meta["path_name"]] = pickle.dumps(_CreatesMarker(marker))
    return edit


def test_a_pickled_constant_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "payload_ran"
    crafted = rewritten(saved_program(tmp_path), pickled_constant(marker))
    status, out, err = in_process(crafted)
    assert (status, out) == (2, "")
    assert err == (
        f"torchscan: {crafted}: its constant 'offset' is saved as a pickle, and reading that would run code from "
        "the file; only if you trust the file: --trust-file (trust_file=True) loads it with torch.export.load\n"
    )
    with pytest.raises(UntrustedFileError):
        load_exported_program(crafted)
    assert not marker.exists()


def test_the_opt_in_hands_the_file_to_torch(tmp_path):
    marker = tmp_path / "payload_ran"
    crafted = rewritten(saved_program(tmp_path), pickled_constant(marker))
    with pytest.raises(ValueError):  # torch ran the pickle; an open file is no tensor
        load_exported_program(crafted, trust_file=True)
    assert marker.exists()


@pytest.mark.parametrize(
    ("edit", "refusal"),
    [
        (lambda e: e.__setitem__("data/aotinductor/model/model.so", b"\x7fELF"), "it holds AOTInductor compiled code"),
        (lambda e: e.__setitem__("data/weights/model.pt", b"PK"), "legacy pickle format"),
        (lambda e: e.__setitem__("data/constants/custom_obj_0", b""), "an entry this reader does not know"),
        (lambda e: e.__setitem__("code/__init__.py", b"import os"), "an entry this reader does not know"),
    ],
)
def test_entries_that_only_code_could_read_are_refused(tmp_path, edit, refusal):
    crafted = rewritten(saved_program(tmp_path), edit)
    with pytest.raises(UntrustedFileError, match=refusal):
        load_exported_program(crafted)


def _edit_program(change):
    def edit(entries):
        program = json.loads(entries["models/model.json"])
        change(program)
        entries["models/model.json"] = json.dumps(program).encode()
    return edit


def _first_expression(program):
    stack = [program]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "expr_str" in item:
                return item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    raise AssertionError("no symbolic expression in the program")


def test_code_in_a_symbolic_expression_is_refused_before_sympy_sees_it(tmp_path):
    marker = tmp_path / "payload_ran"
    module = nn.Linear(4, 3)
    path = tmp_path / "dynamic.pt2"
    batch = torch.export.Dim("batch")
    torch.export.save(torch.export.export(module, (torch.rand(2, 4),), dynamic_shapes=({0: batch},)), path)
    payload = f"Symbol('s0') + __import__('pathlib').Path({str(marker)!r}).touch()"
    crafted = rewritten(path, _edit_program(lambda program: _first_expression(program).__setitem__("expr_str", payload)))
    with pytest.raises(UntrustedFileError, match="symbolic expression"):
        load_exported_program(crafted)
    assert not marker.exists()


def test_a_guard_that_is_not_a_size_comparison_is_refused(tmp_path):
    guard = "L['x'].size()[0] == __import__('os').getpid()"
    crafted = rewritten(saved_program(tmp_path), _edit_program(lambda program: program.__setitem__("guards_code", [guard])))
    with pytest.raises(UntrustedFileError, match="input guard"):
        load_exported_program(crafted)


def test_a_node_calling_a_function_outside_the_operators_is_refused(tmp_path):
    def retarget(program):
        for node in program["graph_module"]["graph"]["nodes"]:
            if node["target"] == "torch.ops.aten.add.Tensor":
                node["target"] = "torch.save"
                return
        raise AssertionError("no add node")

    crafted = rewritten(saved_program(tmp_path), _edit_program(retarget))
    with pytest.raises(UntrustedFileError, match="its graph calls 'torch.save'"):
        load_exported_program(crafted)


def test_a_pytree_context_that_would_import_a_module_is_refused(tmp_path):
    def enum_context(program):
        signature = program["graph_module"]["module_call_graph"][0]["signature"]
        protocol, spec = json.loads(signature["in_spec"])
        spec["context"] = json.dumps({"__enum__": True, "fqn": "antigravity:Unknown", "name": "X"})
        signature["in_spec"] = json.dumps([protocol, spec])

    crafted = rewritten(saved_program(tmp_path), _edit_program(enum_context))
    assert "antigravity" not in sys.modules
    with pytest.raises(UntrustedFileError, match="imports the module 'antigravity'"):
        load_exported_program(crafted)
    assert "antigravity" not in sys.modules


def test_a_saved_program_reads_back_equal_to_torchs_loader(tmp_path):
    path = saved_program(tmp_path)
    ours, theirs = load_exported_program(path), load_exported_program(path, trust_file=True)
    assert str(ours.graph) == str(theirs.graph)
    for name, tensor in theirs.state_dict.items():
        assert torch.equal(ours.state_dict[name], tensor), name
    x = torch.rand(2, 4)
    assert torch.equal(ours.module()(x), theirs.module()(x))
    report = torchscan_dispatch.crawl_module(ours, args=(x,))
    assert sum(report["operator_flops"]["by_operator"].values()) == 2 * 2 * 4 * 3


class TiedLanguageModel(nn.Module):
    """An embedding whose weight the output projection shares."""

    def __init__(self, vocab: int = 50, width: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.hidden = nn.Linear(width, width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens):
        return self.head(torch.relu(self.hidden(self.embed(tokens))))


# 50 x 16 shared + 16 x 16 + 16
TIED_PARAMETERS = 50 * 16 + 16 * 16 + 16


def _trainable(report) -> int:
    return report["totals"]["trainable_parameters"]["value"]


@pytest.mark.parametrize("trust_file", [False, True])
def test_tied_weights_are_counted_once_after_export_save_and_load(tmp_path, trust_file):
    model = TiedLanguageModel()
    tokens = torch.randint(50, (2, 5))
    path = tmp_path / "tied.pt2"
    torch.export.save(torch.export.export(model, (tokens,)), path)
    loaded = load_exported_program(path, trust_file=trust_file)
    assert _trainable(torchscan_dispatch.crawl_module(model, args=(tokens,))) == TIED_PARAMETERS
    assert _trainable(torchscan_dispatch.crawl_module(loaded, args=(tokens,))) == TIED_PARAMETERS
    assert _trainable(torchscan_dispatch.crawl_module(loaded, device="meta")) == TIED_PARAMETERS


@pytest.mark.parametrize("capture", ["script", "trace"])
def test_tied_weights_are_counted_once_after_jit_save_and_load(tmp_path, capture):
    model = TiedLanguageModel().eval()
    tokens = torch.randint(50, (2, 5))
    scripted = torch.jit.script(model) if capture == "script" else torch.jit.trace(model, (tokens,))
    path = tmp_path / "tied.pt"
    torch.jit.save(scripted, str(path))
    loaded = torch.jit.load(str(path))
    assert _trainable(torchscan_dispatch.crawl_module(loaded, args=(tokens,))) == TIED_PARAMETERS


_REGISTERING_PACKAGE = textwrap.dedent(
    '''
    """Registers its output class with pytree on import, as transformers does."""
    import dataclasses
    import torch

    @dataclasses.dataclass
    class Output:
        logits: torch.Tensor

    torch.utils._pytree.register_dataclass(Output, serialized_type_name="outputpkg.Output")

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 3)

        def forward(self, x):
            return Output(self.linear(x))
    '''
)


def test_a_pytree_type_from_a_package_names_the_package_and_import_loads_it(tmp_path):
    (tmp_path / "outputpkg.py").write_text(_REGISTERING_PACKAGE)
    make = (
        "import torch, outputpkg; "
        "torch.export.save(torch.export.export(outputpkg.Model(), (torch.rand(2, 4),)), 'out.pt2')"
    )
    subprocess.run([sys.executable, "-c", make], cwd=tmp_path, check=True, timeout=300,
                   env={**os.environ, "PYTHONPATH": str(tmp_path)})  # fmt: skip
    env_path = os.pathsep.join([str(tmp_path), str(ROOT / "python"), *sys.path])
    run = lambda *extra: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "torchscan_dispatch", "out.pt2", "--json", "-", *extra],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": env_path},
    )  # fmt: skip
    refused = run()
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == (
        "torchscan: out.pt2: the program's inputs or outputs are a outputpkg.Output, a pytree type no imported "
        "package registered: import outputpkg first (python -m torchscan_dispatch --import outputpkg ...)\n"
    )
    loaded = run("--import", "outputpkg")
    assert loaded.returncode == 0, loaded.stderr
    assert sum(json.loads(loaded.stdout)["operator_flops"]["by_operator"].values()) == 2 * 2 * 4 * 3


def test_a_transformers_program_loads_once_transformers_is_imported(tmp_path):
    prepare_torchvision()  # transformers imports torchvision (docs/cli.md: CUDA wheels beside the CPU torch)
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    config = transformers.BertConfig(
        vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=16,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.BertModel(config).eval()
    tokens = torch.randint(64, (1, 8))
    path = tmp_path / "bert.pt2"
    torch.export.save(torch.export.export(model, (tokens,)), path)
    program = load_exported_program(path)
    report = torchscan_dispatch.crawl_module(program, args=(tokens,))
    in_memory = torchscan_dispatch.crawl_module(model, args=(tokens,))
    assert report["operator_flops"]["total"] == in_memory["operator_flops"]["total"]
    assert _trainable(report) == sum(p.numel() for p in model.parameters())
    # In a process without transformers, the file names it.
    probe = (
        "import sys; from torchscan_dispatch.exported import load_exported_program\n"
        "try:\n    load_exported_program(sys.argv[1])\nexcept ValueError as error:\n    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), *sys.path])})  # fmt: skip
    assert "import transformers first" in result.stdout, result.stdout + result.stderr


def test_missing_pytree_type_error_is_a_value_error():
    assert issubclass(MissingPytreeTypeError, ValueError) and issubclass(UntrustedFileError, ValueError)


def test_tied_weights_loaded_from_a_state_dict_are_counted_once():
    # torch.load keeps the shared storage but gives each name its own tensor;
    # assign=True makes them two Parameter objects on one storage.
    buffer = io.BytesIO()
    torch.save(TiedLanguageModel().state_dict(), buffer)
    buffer.seek(0)
    model = TiedLanguageModel()
    model.load_state_dict(torch.load(buffer), assign=True)
    assert model.head.weight is not model.embed.weight
    assert model.head.weight.data_ptr() == model.embed.weight.data_ptr()
    report = torchscan_dispatch.crawl_module(model, args=(torch.randint(50, (2, 5)),))
    assert _trainable(report) == TIED_PARAMETERS


class OverloadedLayer(nn.Module):
    """A layer with forward overloads, as torchvision's _DenseLayer: the
    TorchScript compiler names its methods forward__0 and forward__1. (This
    file has no `from __future__ import annotations`: TorchScript cannot
    read the overloads' annotations as strings.)"""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    @torch.jit._overload_method  # noqa: F811
    def forward(self, x: list[Tensor]) -> Tensor:  # noqa: F811
        ...

    @torch.jit._overload_method  # noqa: F811
    def forward(self, x: Tensor) -> Tensor:  # noqa: F811
        ...

    def forward(self, x):  # noqa: F811
        inputs = [x] if isinstance(x, torch.Tensor) else x
        return self.linear(torch.cat(inputs, 0))


class OverloadedNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = OverloadedLayer()
        self.second = OverloadedLayer()

    def forward(self, x):
        return self.second([self.first(x), x])


def test_layers_with_overloaded_forward_methods_are_layers_of_a_scripted_crawl(tmp_path):
    path = tmp_path / "overloaded.pt"
    torch.jit.save(torch.jit.script(OverloadedNet()), str(path))
    report = torchscan_dispatch.crawl_module(torch.jit.load(str(path)), args=(torch.rand(2, 4),))
    paths = [layer["path"] for layer in report["layers"]]
    assert paths == ["", "first", "first.linear", "second", "second.linear"]
    # first: (2 x 4) @ (4 x 4); second: (4 x 4) @ (4 x 4), as matrix products.
    assert report["operator_flops"]["total"]["value"] == 2 * 2 * 4 * 4 + 2 * 4 * 4 * 4


def test_what_torch_prints_while_loading_is_shown_only_with_verbose(tmp_path):
    truncated = tmp_path / "truncated.pt2"
    truncated.write_bytes(saved_program(tmp_path).read_bytes()[:3000])
    quiet = python_cli(truncated, "--trust-file")
    assert quiet.returncode == 2 and quiet.stderr.count("\n") == 1, quiet.stderr
    assert quiet.stderr.startswith(f"torchscan: {truncated} is not a torch.export program file (.pt2): ")
    verbose = python_cli(truncated, "--trust-file", "--verbose")
    assert verbose.returncode == 2
    lines = verbose.stderr.splitlines()
    assert lines[-1] == quiet.stderr.rstrip("\n")
    assert len(lines) > 1 and all(line.startswith("torchscan: torch said: ") for line in lines[:-1])


def test_scripted_densenet_has_every_dense_layer_and_the_eager_counts():
    # torchvision's _DenseLayer declares forward overloads; scripted, its 58
    # layers are called as forward__0 / forward__1.
    prepare_torchvision()
    torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed")
    torch.manual_seed(0)
    model = torchvision.models.densenet121().eval()
    x = torch.rand(1, 3, 64, 64)
    scripted = torchscan_dispatch.crawl_module(torch.jit.script(model), args=(x,))
    eager = torchscan_dispatch.crawl_module(model, args=(x,))
    assert [layer["type"] for layer in scripted["layers"]].count("_DenseLayer") == 58
    assert [layer["path"] for layer in scripted["layers"]] == [layer["path"] for layer in eager["layers"]]
    assert scripted["operator_flops"]["total"] == eager["operator_flops"]["total"]
