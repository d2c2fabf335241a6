"""C++ rule wrappers for targets that use LibTorch.

They add the flags the installed torch was built with (C++ standard,
_GLIBCXX_USE_CXX11_ABI) and name the torch version the code is built against.
Kept apart from build_defs.bzl so torch-free packages never trigger torch
discovery.
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library", "cc_test")
load("@torch//:defs.bzl", "TORCH_CXXOPTS", "TORCH_FULL_VERSION")
load("//tools:build_defs.bzl", "PROJECT_COPTS", "SANITIZER_DATA", "sanitizer_deps")

TORCH_LOCAL_DEFINES = [
    'TORCHSCAN_TORCH_FULL_VERSION=\\"%s\\"' % TORCH_FULL_VERSION,
]

def _with_torch_flags(kwargs):
    kwargs = dict(kwargs)
    kwargs["copts"] = PROJECT_COPTS + TORCH_CXXOPTS + kwargs.get("copts", [])
    kwargs["local_defines"] = TORCH_LOCAL_DEFINES + kwargs.get("local_defines", [])
    kwargs["deps"] = kwargs.get("deps", []) + ["@torch"]
    return kwargs

def torch_cc_library(name, **kwargs):
    cc_library(name = name, **_with_torch_flags(kwargs))

def torch_cc_binary(name, **kwargs):
    cc_binary(name = name, **_with_torch_flags(kwargs))

def torch_cc_test(name, **kwargs):
    kwargs = dict(kwargs)
    kwargs["data"] = kwargs.get("data", []) + SANITIZER_DATA
    kwargs["deps"] = kwargs.get("deps", []) + sanitizer_deps()
    cc_test(name = name, **_with_torch_flags(kwargs))
