"""Helpers of the reliability tests: snapshots of everything a measurement
touches (checked before and after each fault, never assumed), and a fresh
Python process for load-time tests."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import torch
from torch import nn
from torch.nn.modules import module as module_globals

import torchscan_dispatch

_GLOBAL_HOOK_DICTS = (
    "_global_forward_pre_hooks",
    "_global_forward_hooks",
    "_global_forward_hooks_with_kwargs",
    "_global_forward_hooks_always_called",
    "_global_backward_pre_hooks",
    "_global_backward_hooks",
)

_MODULE_HOOK_DICTS = (
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_backward_pre_hooks",
    "_backward_hooks",
)


def thread_state() -> tuple:
    """The calling thread's dispatch-key TLS and grad modes."""
    return (
        repr(torch._C._dispatch_tls_local_include_set()),
        repr(torch._C._dispatch_tls_local_exclude_set()),
        torch.is_grad_enabled(),
        torch.is_inference_mode_enabled(),
    )


def global_hooks() -> tuple:
    """torch.nn's global module hooks (ModuleTracker installs some)."""
    return (
        *(dict(getattr(module_globals, name)) for name in _GLOBAL_HOOK_DICTS),
        module_globals._global_is_full_backward_hook,
    )


def module_state(model: nn.Module) -> list:
    """Every submodule's hooks (the dicts' contents, by identity) and flag."""
    return [
        (name, module.training, *(dict(getattr(module, attr)) for attr in _MODULE_HOOK_DICTS))
        for name, module in model.named_modules()
    ]


def mm_flops(m: int, k: int, n: int) -> int:
    """Hand computation: [m,k] @ [k,n] costs 2*m*k*n FLOPs."""
    return 2 * m * k * n


def library_environment() -> dict[str, str]:
    """The environment a child process needs to use the library under test."""
    env = dict(os.environ)
    env["TORCHSCAN_DISPATCH_LIBRARY"] = torchscan_dispatch.library_path()
    package_root = str(Path(torchscan_dispatch.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([package_root, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def run_fresh_python(code: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    """Runs `code` in a new interpreter; returns the finished process."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=library_environment() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def conflicting_fallback_library() -> Path | None:
    """The test-only library that registers a fallback on our dispatch key
    (//torchscan_dispatch/testdata:libconflicting_fallback.so), if built."""
    override = os.environ.get("TORCHSCAN_CONFLICT_LIBRARY")
    if override:
        return Path(override)
    plugin = Path(os.environ.get("TORCHSCAN_DISPATCH_LIBRARY") or torchscan_dispatch.library_path())
    candidate = plugin.parent.parent / "torchscan_dispatch" / "testdata" / "libconflicting_fallback.so"
    return candidate if candidate.is_file() else None
