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

# NOTE [Tests compile without optimization]
# A test's own translation unit builds inputs and checks results; what it
# tests is in the libraries it links, which compile as configured (-c opt,
# or the sanitizers' -O1). The 70 test sources were 2,042 of the ASan
# stage's 3,603 CPU seconds of compiling; at -O0 they take 1,218 there, and
# 883 instead of 971 in the -c opt build (docs/building.md, "Durations").
# Target copts follow the configuration's own -O, so this one wins in the
# sanitizer builds too.
TEST_COPTS = ["-O0"]

def _with_copts(kwargs, extra):
    kwargs = dict(kwargs)
    kwargs["copts"] = PROJECT_COPTS + extra + kwargs.get("copts", [])
    return kwargs

def ts_cc_library(name, **kwargs):
    cc_library(name = name, **_with_copts(kwargs, []))

def ts_cc_binary(name, **kwargs):
    cc_binary(name = name, **_with_copts(kwargs, []))

# The sanitizer suppressions (.bazelrc's --config=asan/tsan) travel with every
# test, so their relative paths resolve from its runfiles directory; TSan
# builds also link the absl::Mutex annotations (tools/sanitizers/).
# Label() keeps them pointing into this repository when another workspace
# uses these macros.
SANITIZER_DATA = [Label("//tools/sanitizers:suppressions")]

def sanitizer_deps():
    return select({
        str(Label("//tools/sanitizers:tsan_build")): [
            Label("//tools/sanitizers:absl_mutex_tsan"),
        ],
        "//conditions:default": [],
    })

def ts_cc_test(name, **kwargs):
    kwargs = dict(kwargs)
    kwargs["data"] = kwargs.get("data", []) + SANITIZER_DATA
    kwargs["deps"] = kwargs.get("deps", []) + sanitizer_deps()
    cc_test(name = name, **_with_copts(kwargs, TEST_COPTS))
