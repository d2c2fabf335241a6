"""Writes the torchscan_dispatch wheel; run through tools/build_wheel.

The wheel holds the Python package, the compiled library at
torchscan_dispatch/_lib/libtorchscan_dispatch.so, the abseil shared libraries
it links (Debian's, bundled beside it: the library's RUNPATH has $ORIGIN), and
a generated torchscan_dispatch/_build_info.py that records the torch version
the library was built against. The package compares that with the running
torch before loading the library (python/torchscan_dispatch/_library.py).

The wheel is tagged with that torch version (local version label, e.g.
0.1.0+torch2.13.0.cpu) and requires exactly it. It is written with zipfile,
offline and reproducibly: sorted entries, fixed timestamps.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

LIBRARY_NAME = "libtorchscan_dispatch.so"
# Libraries the wheel carries beside LibTorch's own: the ones Debian provides
# and a fresh virtual environment (or another Debian release) may not have.
BUNDLED_PREFIXES = ("libabsl_",)
# 1980-01-01, the earliest time a zip entry can hold.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def _run(command: list[str]) -> str:
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def _torch_version_of(library: Path) -> str:
    """The torch version the library reports it was built against; loading it
    into this interpreter's torch also proves it loads and can count."""
    import torch

    torch.ops.load_library(str(library))
    info = json.loads(torch.ops.torchscan._build_info())
    if not info["counting_available"]:
        sys.exit(f"build_wheel: {library} cannot count: {info['counting_error']}")
    if info["torch_version"] != torch.__version__:
        sys.exit(
            f"build_wheel: {library} was built against torch {info['torch_version']} "
            f"but this interpreter has torch {torch.__version__}; set TORCHSCAN_PYTHON "
            "to the interpreter the library was built for."
        )
    return info["torch_version"]


def _bundled_libraries(library: Path) -> list[Path]:
    """The abseil libraries to bundle. They must all be direct dependencies of
    the library: only its RUNPATH ($ORIGIN) points at _lib/."""
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", _run(["readelf", "-d", str(library)])))
    resolved: dict[str, Path] = {}
    for line in _run(["ldd", str(library)]).splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>":
            if parts[2] == "not":
                sys.exit(f"build_wheel: {library} needs {parts[0]}, which is not found")
            resolved[parts[0]] = Path(parts[2])
    bundled = []
    for name, path in sorted(resolved.items()):
        if not name.startswith(BUNDLED_PREFIXES):
            continue
        if name not in needed:
            sys.exit(
                f"build_wheel: {name} is an indirect dependency of {library.name}; "
                "bundling it would not make the wheel self-contained."
            )
        bundled.append(path)
    return bundled


def _local_label(torch_version: str) -> str:
    """'2.13.0+cpu' -> 'torch2.13.0.cpu' (a PEP 440 local version label)."""
    return "torch" + re.sub(r"[^A-Za-z0-9.]", ".", torch_version)


def _tag() -> str:
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = re.sub(r"[-.]", "_", sysconfig.get_platform())
    # The library uses no Python C API (torch.ops.load_library loads it), so
    # it has no Python ABI; the python tag is the interpreter whose torch
    # wheel it was built against.
    return f"{python}-none-{platform}"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build(package_dir: Path, library: Path, license_file: Path, out_dir: Path) -> Path:
    version_text = (package_dir / "_version.py").read_text()
    package_version = re.search(r'__version__ = "([^"]+)"', version_text).group(1)
    torch_version = _torch_version_of(library)
    version = f"{package_version}+{_local_label(torch_version)}"
    tag = _tag()
    dist_info = f"torchscan_dispatch-{version}.dist-info"

    files: dict[str, tuple[bytes, bool]] = {}  # archive name -> (data, executable)
    # The package's modules and its data files (device_table.json, which
    # devices.py reads).
    sources = [*package_dir.rglob("*.py"), *package_dir.rglob("*.json")]
    for source in sorted(sources):
        relative = source.relative_to(package_dir)
        if "__pycache__" in relative.parts or relative.parts[0] == "_lib" or relative.name == "_build_info.py":
            continue
        files[f"torchscan_dispatch/{relative.as_posix()}"] = (source.read_bytes(), False)
    files["torchscan_dispatch/_build_info.py"] = (
        (
            '"""Generated by tools/build_wheel: what the bundled library was built against."""\n'
            "\n"
            f'PACKAGE_VERSION = "{version}"\n'
            f'TORCH_VERSION = "{torch_version}"\n'
        ).encode(),
        False,
    )
    files[f"torchscan_dispatch/_lib/{LIBRARY_NAME}"] = (library.read_bytes(), True)
    for bundled in _bundled_libraries(library):
        files[f"torchscan_dispatch/_lib/{bundled.name}"] = (bundled.read_bytes(), True)

    files[f"{dist_info}/METADATA"] = (
        "\n".join(
            [
                "Metadata-Version: 2.1",
                "Name: torchscan-dispatch",
                f"Version: {version}",
                "Summary: TorchScan 0.2 reports counted in C++ at the PyTorch dispatcher",
                "License: Apache-2.0",
                f"Requires-Dist: torch=={torch_version}",
                "",
                f"Built against torch {torch_version}; it loads only into that exact "
                "torch version (a dispatcher plugin is not ABI-compatible across "
                "torch releases).",
                "",
            ]
        ).encode(),
        False,
    )
    files[f"{dist_info}/WHEEL"] = (
        "\n".join(
            [
                "Wheel-Version: 1.0",
                "Generator: torchscan_dispatch tools/build_wheel",
                "Root-Is-Purelib: false",
                f"Tag: {tag}",
                "",
            ]
        ).encode(),
        False,
    )
    files[f"{dist_info}/LICENSE"] = (license_file.read_bytes(), False)

    record_name = f"{dist_info}/RECORD"
    record = [_record_line(name, data) for name, (data, _) in sorted(files.items())]
    record.append(f"{record_name},,")
    files[record_name] = (("\n".join(record) + "\n").encode(), False)

    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / f"torchscan_dispatch-{version}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        # RECORD last, as the wheel specification recommends.
        for name in sorted(files, key=lambda n: (n == record_name, n)):
            data, executable = files[name]
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.external_attr = (0o100755 if executable else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return wheel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package-dir", type=Path, required=True)
    parser.add_argument("--library", type=Path, required=True)
    parser.add_argument("--license", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args()
    print(build(args.package_dir, args.library.resolve(), args.license, args.out_dir))


if __name__ == "__main__":
    main()
