"""C++ rule wrappers that give every target of this project the same flags.

Torch-free targets (report/, formulas/) use the project's C++ standard and no
LibTorch; torch targets add the flags the installed torch was built with.
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library", "cc_test")

PROJECT_COPTS = [
    "-std=c++20",
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    # Designated initializers may leave members to their defaults.
    "-Wno-missing-field-initializers",
]

def _with_copts(kwargs, extra):
    kwargs = dict(kwargs)
    kwargs["copts"] = PROJECT_COPTS + extra + kwargs.get("copts", [])
    return kwargs

def ts_cc_library(name, **kwargs):
    cc_library(name = name, **_with_copts(kwargs, []))

def ts_cc_binary(name, **kwargs):
    cc_binary(name = name, **_with_copts(kwargs, []))

def ts_cc_test(name, **kwargs):
    cc_test(name = name, **_with_copts(kwargs, []))
