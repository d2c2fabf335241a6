"""The installed-wheel layout: the torch version recorded by tools/build_wheel
is checked at import, before the library is loaded.

The package is copied into the wheel's layout with a placeholder library (an
empty file, which dlopen would reject with a different error), so a failure
here shows which check ran. tools/test_wheel checks a real wheel in a fresh
virtual environment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "torchscan_dispatch"


def _installed_layout(root: Path, built_for: str) -> Path:
    package = root / "torchscan_dispatch"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__", "_lib", "_build_info.py"))
    (package / "_lib").mkdir()
    (package / "_lib" / "libtorchscan_dispatch.so").write_bytes(b"")
    (package / "_build_info.py").write_text(
        f'PACKAGE_VERSION = "0.1.0+test"\nTORCH_VERSION = "{built_for}"\n'
    )
    return package


def _run(root: Path, program: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TORCHSCAN_DISPATCH_LIBRARY"}
    env["PYTHONPATH"] = str(root)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_import_refuses_another_torch_before_loading(tmp_path: Path):
    _installed_layout(tmp_path, built_for=torch.__version__)
    outcome = _run(
        tmp_path,
        """
        import json, torch
        torch.__version__ = "9.9.9+other"
        try:
            import torchscan_dispatch
            message = None
        except ImportError as error:
            message = str(error)
        print(json.dumps({"message": message}))
        """,
    )
    message = outcome["message"]
    assert message is not None
    assert f"built against torch {torch.__version__}" in message
    assert "runs torch 9.9.9+other" in message
    assert f"pip install torch=={torch.__version__}" in message
    assert "was not loaded" in message


def test_matching_torch_goes_on_to_load_the_packaged_library(tmp_path: Path):
    package = _installed_layout(tmp_path, built_for=torch.__version__)
    outcome = _run(
        tmp_path,
        """
        import json, torch
        import torchscan_dispatch
        path = torchscan_dispatch.library_path()
        try:
            torchscan_dispatch.load_library()
            message = None
        except ImportError as error:
            message = str(error)
        print(json.dumps({"path": path, "message": message}))
        """,
    )
    assert outcome["path"] == str(package / "_lib" / "libtorchscan_dispatch.so")
    # The version check passed; dlopen then rejects the empty placeholder.
    assert outcome["message"].startswith(f"Loading {outcome['path']} into torch")
