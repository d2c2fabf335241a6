"""C++ rule wrappers for targets that use LibTorch.

They add the flags the installed torch was built with (C++ standard,
_GLIBCXX_USE_CXX11_ABI) and name the torch version the code is built against.
Kept apart from build_defs.bzl so torch-free packages never trigger torch
discovery.
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library", "cc_test")
load("@torch//:defs.bzl", "TORCH_CXXOPTS", "TORCH_FULL_VERSION")
load("//tools:build_defs.bzl", "PROJECT_COPTS", "SANITIZER_DATA", "TEST_COPTS", "sanitizer_deps")

TORCH_LOCAL_DEFINES = [
    'TORCHSCAN_TORCH_FULL_VERSION=\\"%s\\"' % TORCH_FULL_VERSION,
]

# NOTE [Per-operator headers]
# <ATen/ATen.h> and <torch/torch.h> declare every ATen operator and cost a
# translation unit seconds of compile time in every build configuration.
# A target built with per_operator_headers = True includes Tensor methods
# from <ATen/core/Tensor.h> and each free function (at::ones) from its own
# <ATen/ops/NAME.h>: AT_PER_OPERATOR_HEADERS makes ATen's own headers
# (ExpandUtils.h) take the same narrow route instead of <ATen/Functions.h>,
# and TORCH_ASSERT_ONLY_METHOD_OPERATORS turns any include of the
# all-operator headers into a compile error, as in PyTorch's own sources.
PER_OPERATOR_HEADER_DEFINES = [
    "TORCH_ASSERT_ONLY_METHOD_OPERATORS",
    "AT_PER_OPERATOR_HEADERS",
]

def _with_torch_flags(kwargs, extra = []):
    kwargs = dict(kwargs)
    per_operator = kwargs.pop("per_operator_headers", False)
    kwargs["copts"] = PROJECT_COPTS + TORCH_CXXOPTS + extra + kwargs.get("copts", [])
    kwargs["local_defines"] = (
        TORCH_LOCAL_DEFINES +
        (PER_OPERATOR_HEADER_DEFINES if per_operator else []) +
        kwargs.get("local_defines", [])
    )
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

    # NOTE [Tests compile without optimization] in build_defs.bzl.
    cc_test(name = name, **_with_torch_flags(kwargs, TEST_COPTS))
