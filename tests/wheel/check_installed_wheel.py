"""Checks an installed torchscan_dispatch wheel from inside its virtual
environment; tools/test_wheel runs it with the environment's interpreter,
outside the checkout, with no PYTHONPATH or TORCHSCAN_DISPATCH_LIBRARY.

Prints one line per check and a closing 'N passed, N failed' line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import torch

results: list[tuple[str, str | None]] = []


def check(name):
    def run(function):
        try:
            function()
        except Exception as error:  # noqa: BLE001 - every failure is reported
            results.append((name, f"{type(error).__name__}: {error}"))
        else:
            results.append((name, None))
        return function

    return run


def mapped_libraries() -> set[Path]:
    paths = set()
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and ".so" in fields[5]:
            paths.add(Path(fields[5]))
    return paths


torch_lib = Path(torch.__file__).resolve().parent / "lib"
import torchscan_dispatch  # noqa: E402 - after torch, as users do

package_dir = Path(torchscan_dispatch.__file__).resolve().parent


@check("the package and its library come from this environment, not a checkout")
def _():
    assert package_dir.is_relative_to(Path(sys.prefix).resolve()), package_dir
    assert sys.prefix != sys.base_prefix, "not running in a virtual environment"
    expected = package_dir / "_lib" / "libtorchscan_dispatch.so"
    assert Path(torchscan_dispatch.library_path()) == expected, torchscan_dispatch.library_path()


@check("the wheel is tagged with and requires the exact torch it was built against")
def _():
    version = metadata.version("torchscan-dispatch")
    label = "torch" + torch.__version__.replace("+", ".")
    assert version == f"{torchscan_dispatch.__version__}+{label}", version
    assert metadata.requires("torchscan-dispatch") == [f"torch=={torch.__version__}"]


@check("measure_flops counts a matrix product: 2*5*7*3 = 210 FLOPs, complete")
def _():
    a, b = torch.ones(5, 7), torch.ones(7, 3)
    report = torchscan_dispatch.measure_flops(lambda: a @ b)
    expected = 2 * 5 * 7 * 3  # one multiply and one add per term of each of 5*3 sums of 7
    assert report["total"]["status"] == "complete", report["total"]
    assert report["total"]["value"] == expected, report["total"]
    assert report["by_operator"] == {"aten.mm": expected}, report["by_operator"]
    assert report["context"]["torch_version"] == torch.__version__


@check("the device table is the wheel's data file, and its library reads the same rows")
def _():
    from torchscan_dispatch import devices

    assert (package_dir / devices.TABLE_FILE).is_file()
    assert devices.device_spec("NVIDIA H100 80GB HBM3").peak_flops["bf16"] == 989.5e12
    from torchscan_dispatch._library import hooks

    assert hooks().device_model("nvidia h100 80gb hbm3")["name"] == "H100 SXM"


@check("LibTorch is this environment's; abseil is the wheel's own copy")
def _():
    libraries = mapped_libraries()
    ours = [p for p in libraries if p.name == "libtorchscan_dispatch.so"]
    assert ours == [package_dir / "_lib" / "libtorchscan_dispatch.so"], ours
    torch_libraries = [p for p in libraries if p.name in ("libc10.so", "libtorch.so", "libtorch_cpu.so")]
    assert len(torch_libraries) == 3, torch_libraries
    assert all(p.parent == torch_lib for p in torch_libraries), torch_libraries
    absl = [p for p in libraries if p.name.startswith("libabsl_")]
    assert absl, "no abseil library is mapped"
    assert all(p.parent == package_dir / "_lib" for p in absl), absl


@check("ldd resolves every dependency of the installed library inside the environment")
def _():
    library = package_dir / "_lib" / "libtorchscan_dispatch.so"
    output = subprocess.run(["ldd", str(library)], check=True, capture_output=True, text=True).stdout
    assert "not found" not in output, output
    for line in output.splitlines():
        name, _, target = line.strip().partition(" => ")
        if name.startswith(("libc10", "libtorch")):
            assert Path(target.split(" (")[0]).resolve().parent == torch_lib, line
        if name.startswith("libabsl_"):
            assert Path(target.split(" (")[0]).resolve().parent == package_dir / "_lib", line


@check("under another torch version, import fails naming the needed version, before loading")
def _():
    other = "2.12.0+cpu" if torch.__version__ != "2.12.0+cpu" else "2.14.0+cpu"
    program = textwrap.dedent(
        f"""
        import json, torch
        torch.__version__ = {other!r}
        try:
            import torchscan_dispatch
        except ImportError as error:
            message = str(error)
        else:
            message = None
        maps = open("/proc/self/maps").read()
        print(json.dumps({{"message": message, "loaded": "libtorchscan_dispatch.so" in maps}}))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TORCHSCAN_DISPATCH_LIBRARY")}
    result = subprocess.run(
        [sys.executable, "-c", program], check=True, capture_output=True, text=True, env=env, timeout=300
    )
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    message = outcome["message"]
    assert message is not None, "import succeeded under a different torch version"
    assert f"built against torch {torch.__version__}" in message, message
    assert f"runs torch {other}" in message, message
    assert f"pip install torch=={torch.__version__}" in message, message
    assert not outcome["loaded"], "the library was loaded before the version check"


failed = 0
for name, error in results:
    print(("ok    " if error is None else "FAIL  ") + name)
    if error is not None:
        failed += 1
        print(textwrap.indent(error, "      "))
print(f"wheel: {len(results) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
