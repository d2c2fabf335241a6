"""The machine the tests run on, and what plain PyTorch can run on it.

The suite must pass on every x86-64 machine (AVX2-only AMD as well as
AVX-512 Intel), so no test assumes a CPU feature. Some workloads are beyond
PyTorch itself on some CPUs: oneDNN has no bf16 LSTM primitive without
AVX-512, yet torch 2.13 sends a bf16 LSTM under CPU autocast to it and
raises "could not create a primitive descriptor". Counting such a workload
is not ours to check on that machine. A test runs the workload once without
any counter first (`skip_unless_plain_pytorch_runs`) and, when PyTorch
itself raises, skips, printing the error and this machine's description;
the workload's other variants (fp32, bf16 on PyTorch's native kernels) still
run and keep its counting covered.

Run as a program, it prints the machine's description (tools/test does).
docs/building.md ("Tests on any machine") shows how to simulate an older CPU
on this one (tools/test --cpu avx2).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
import torch

# Environment variables that make PyTorch, oneDNN and MKL use fewer CPU
# features than the CPU has: how tools/test --cpu simulates an older machine.
SIMULATION_VARIABLES = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")

_plain_pytorch_errors: dict[str, str | None] = {}


def cpu_model() -> str:
    """The first 'model name' of /proc/cpuinfo, or what the platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                return value.strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "unknown CPU"


def onednn_bf16_supported() -> bool | None:
    """Whether oneDNN reports bf16 support here (None if torch cannot say)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return None


def describe() -> str:
    """One line: CPU model, core count, what PyTorch reports and simulates."""
    parts = [
        cpu_model(),
        f"{os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable)",
        f"torch {torch.__version__} CPU capability {torch.backends.cpu.get_cpu_capability()}",
        f"{torch.get_num_threads()} intra-op threads",
    ]
    bf16 = onednn_bf16_supported()
    if bf16 is not None:
        parts.append(f"oneDNN bf16 {'supported' if bf16 else 'not supported'}")
    simulated = [f"{name}={os.environ[name]}" for name in SIMULATION_VARIABLES if os.environ.get(name)]
    if simulated:
        parts.append("simulating " + " ".join(simulated))
    return "; ".join(parts)


def use_an_executable_tmpdir() -> None:
    """Points TMPDIR (for this process, pytest's tmp_path and every child)
    away from a temporary directory mounted noexec, where the tests' copies
    of the library could not be mapped: to the user's cache, as
    tools/test_machine.sh does for tools/test."""
    current = tempfile.gettempdir()
    if not os.statvfs(current).f_flag & os.ST_NOEXEC:
        return
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    fallback = cache / "torchscan-dispatch" / "tmp"
    fallback.mkdir(parents=True, exist_ok=True)
    print(f"note: {current} is mounted noexec; TMPDIR={fallback}")
    os.environ["TMPDIR"] = str(fallback)
    tempfile.tempdir = None  # gettempdir() looks again


def plain_pytorch_error(key: str, make_workload) -> str | None:
    """Runs make_workload()() once without any counter (once per key and
    process): None if it runs, else the error PyTorch raised.

    Only RuntimeError (which NotImplementedError and torch's kernel and
    oneDNN errors are) counts as "PyTorch cannot run it": any other exception
    is a bug in the workload itself and propagates, so a broken workload can
    never turn into a skip."""
    if key not in _plain_pytorch_errors:
        try:
            make_workload()()
        except RuntimeError as error:
            first_line = (str(error).strip().splitlines() or [""])[0]
            _plain_pytorch_errors[key] = f"{type(error).__name__}: {first_line}"
        else:
            _plain_pytorch_errors[key] = None
    return _plain_pytorch_errors[key]


def skip_unless_plain_pytorch_runs(key: str, make_workload) -> None:
    """Skips the calling test, saying why, when plain PyTorch raises on the
    workload on this machine (see plain_pytorch_error)."""
    error = plain_pytorch_error(key, make_workload)
    if error is not None:
        pytest.skip(f"plain PyTorch cannot run {key} on this machine [{describe()}]: {error}")


if __name__ == "__main__":
    print(describe())
