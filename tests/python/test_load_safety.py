"""Load-time safety, each case in a fresh Python process: loading the library
twice, a second copy of it at another path (either order), a torch of another
version, and another library that already owns a fallback on our dispatch
key. Every case must end in a clear error or documented behaviour, never a
crash (docs/reliability.md)."""

import shutil

import pytest
import torch

import torchscan_dispatch
from reliability_support import conflicting_fallback_library, run_fresh_python

KEY = "TESTING_ONLY_GenericMode"


def check(code, **format_args):
    result = run_fresh_python(code.format(**format_args))
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.stdout.strip().splitlines()[-1] == "OK", result.stdout
    return result.stdout


# Shared by the child processes (str.format templates, so braces are doubled):
# the files of a library's mappings in this process.
MAPPED = """
import os
def mapped(path):
    real = os.path.realpath(path)
    return {{line.split()[-1] for line in open("/proc/self/maps") if line.rstrip().endswith(real)}}
"""


def test_loading_the_same_library_twice_is_a_no_op():
    check(
        MAPPED
        + """
import torch, torchscan_dispatch
path = torchscan_dispatch.load_library()
torch.ops.load_library(path)            # torch's own loader, same path
assert torchscan_dispatch.load_library() == path
torch.ops.load_library(os.path.realpath(path))  # the same file by another name
assert len(mapped(path)) == 1
a = torch.ones(2, 3)
report = torchscan_dispatch.measure_flops(lambda: torch.mm(a, a.t()))
assert report["by_operator"] == {{"aten.mm": 2 * 2 * 3 * 2}}, report
print("OK")
"""
    )


def test_a_second_copy_loaded_later_stays_inert(tmp_path):
    copy = tmp_path / "libtorchscan_dispatch_copy.so"
    shutil.copyfile(torchscan_dispatch.library_path(), copy)
    check(
        MAPPED
        + """
import json, torch, torchscan_dispatch
path = torchscan_dispatch.load_library()
torch.ops.load_library({copy!r})        # a second copy at another path
assert mapped({copy!r}), "the copy was loaded"
info = json.loads(torch.ops.torchscan._build_info())
assert os.path.samefile(info["library_path"], path), info  # the first copy still owns the operators
assert info["counting_available"], info
a = torch.ones(2, 3)
report = torchscan_dispatch.measure_flops(lambda: torch.mm(a, a.t()))
assert report["by_operator"] == {{"aten.mm": 24}}, report  # counted once, by the first copy
print("OK")
""",
        copy=str(copy),
    )


def test_a_second_copy_loaded_first_gives_a_clear_import_error(tmp_path):
    copy = tmp_path / "libtorchscan_dispatch_copy.so"
    shutil.copyfile(torchscan_dispatch.library_path(), copy)
    stdout = check(
        """
import torch, torchscan_dispatch
torch.ops.load_library({copy!r})
try:
    torchscan_dispatch.load_library()
except ImportError as error:
    print(error)
else:
    raise AssertionError("no ImportError")
a = torch.ones(2, 3)
assert torch.equal(torch.mm(a, a.t()), torch.full((2, 2), 3.0))  # torch is unharmed
print("OK")
""",
        copy=str(copy),
    )
    assert f"Another copy of TorchScan Dispatch, loaded earlier from {copy}" in stdout
    assert torchscan_dispatch.library_path() in stdout


def test_a_torch_of_another_version_gives_a_clear_import_error():
    # Simulated honestly without building anything: the child process claims
    # another torch version before importing the package.
    stdout = check(
        """
import torch
torch.__version__ = "2.99.0+simulated"
import torchscan_dispatch
for attempt in (torchscan_dispatch.load_library, lambda: torchscan_dispatch.measure_flops(lambda: None)):
    try:
        attempt()
    except ImportError as error:
        print(error)
    else:
        raise AssertionError("no ImportError")
print("OK")
"""
    )
    lines = stdout.strip().splitlines()
    assert len(lines) == 3
    for message in lines[:2]:
        assert f"was built against torch {torch.__version__}" in message
        assert "this process runs torch 2.99.0+simulated" in message


def test_another_fallback_on_our_key_gives_a_clear_import_error():
    conflicting = conflicting_fallback_library()
    if conflicting is None:
        pytest.skip(
            "build //torchscan_dispatch/testdata:libconflicting_fallback.so first "
            "(tools/test does), or set TORCHSCAN_CONFLICT_LIBRARY"
        )
    stdout = check(
        """
import torch
torch.ops.load_library({conflicting!r})   # another tool owns the key first
import torchscan_dispatch
before = (repr(torch._C._dispatch_tls_local_include_set()), repr(torch._C._dispatch_tls_local_exclude_set()))
try:
    torchscan_dispatch.load_library()
except ImportError as error:
    print(error)
else:
    raise AssertionError("no ImportError")
# The native side refuses too (ActiveCounting throws a c10::Error), and the
# thread is unchanged. The extension module comes from the copy loaded above
# (load_library() refused it, so hooks() would too).
import importlib.machinery, importlib.util
from torchscan_dispatch._library import library_path
loader = importlib.machinery.ExtensionFileLoader("torchscan_dispatch._hooks", library_path())
native = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
loader.exec_module(native)
try:
    native.begin_counting({{}})
except RuntimeError as error:
    print(str(error).splitlines()[0])
else:
    raise AssertionError("counting started")
assert (repr(torch._C._dispatch_tls_local_include_set()), repr(torch._C._dispatch_tls_local_exclude_set())) == before
a = torch.ones(2, 3)
assert torch.equal(torch.mm(a, a.t()), torch.full((2, 2), 3.0))  # torch is unharmed
print("OK")
""",
        conflicting=str(conflicting),
    )
    import_error, native_error = stdout.strip().splitlines()[:2]
    assert f"another library already registered a fallback on dispatch key {KEY}" in import_error
    assert "operator counting is unavailable in this process" in import_error
    assert native_error.startswith(f"torchscan: another library already registered a fallback on dispatch key {KEY}")
