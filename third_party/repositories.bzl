"""Every external repository TorchScan Dispatch needs, in one macro.

Both this repository's WORKSPACE and the WORKSPACE of a project that depends
on it call the macro, so they resolve LibTorch, abseil, nlohmann/json and the
offline rule-set stand-ins the same way:

    local_repository(name = "torchscan_dispatch", path = "...")
    load("@torchscan_dispatch//third_party:repositories.bzl",
         "torchscan_dispatch_dependencies")
    torchscan_dispatch_dependencies()

A repository the calling workspace declared before the call (same name) is
left alone: that is how a consumer supplies its own @rules_cc, @abseil, ...
It must then provide the targets this project uses (see docs/bazel.md).

The stand-ins under third_party/ are found through a Label of this file, so
the paths are right whether this repository is the main workspace or an
external one (a plain local_repository path would be resolved against the
consumer's workspace root instead).
"""

load("//third_party:system_libs.bzl", "system_library")
load("//third_party/torch:torch_configure.bzl", "torch_configure")

def _vendored_repository_impl(ctx):
    source = ctx.path(ctx.attr.anchor).dirname.get_child(ctx.attr.directory)
    if not source.exists:
        fail("%s: %s does not exist" % (ctx.name, source))
    for child in source.readdir():
        ctx.symlink(child, child.basename)

# A repository whose files are a directory next to `anchor`, linked in place.
_vendored_repository = repository_rule(
    implementation = _vendored_repository_impl,
    attrs = {
        "anchor": attr.label(
            default = Label("//third_party:repositories.bzl"),
            allow_single_file = True,
        ),
        "directory": attr.string(mandatory = True),
    },
    local = True,
)

# The abseil components this project uses, named as abseil's own Bazel
# targets are (@abseil//:status is absl/status/status.h), with the
# pkg-config modules that link them.
ABSEIL_COMPONENTS = {
    "base": ["absl_base"],
    "cord": ["absl_cord"],
    "flags": ["absl_flags"],
    "flags_parse": ["absl_flags_parse"],
    "flags_usage": ["absl_flags_usage"],
    "flat_hash_map": ["absl_flat_hash_map"],
    "flat_hash_set": ["absl_flat_hash_set"],
    "algorithm_container": [],  # headers only
    "function_ref": ["absl_function_ref"],
    "inlined_vector": ["absl_inlined_vector"],
    "int128": ["absl_int128"],
    "node_hash_map": ["absl_node_hash_map"],
    "span": ["absl_span"],
    "status": ["absl_status"],
    "statusor": ["absl_statusor"],
    "str_format": ["absl_str_format"],
    "strings": ["absl_strings"],
    "synchronization": ["absl_synchronization"],
}

def _declare(rule, name, **kwargs):
    if not native.existing_rule(name):
        rule(name = name, **kwargs)

def torchscan_dispatch_dependencies():
    """Declares the repositories //torchscan_dispatch and its tests use."""

    # Rule sets Bazel 4.2.3 would otherwise download (docs/building.md).
    _declare(_vendored_repository, "rules_cc", directory = "rules_cc")
    _declare(_vendored_repository, "rules_java", directory = "rules_java")
    _declare(
        _vendored_repository,
        "remote_coverage_tools",
        directory = "remote_coverage_tools",
    )
    _declare(
        native.local_repository,
        "platforms",
        path = "/usr/share/bazel/tools/platforms",
    )

    # LibTorch from the installed torch wheel (TORCHSCAN_PYTHON,
    # TORCHSCAN_TORCH_DIR).
    _declare(torch_configure, "torch")

    # C++ libraries from Debian's -dev packages, one target per component.
    _declare(
        system_library,
        "nlohmann_json",
        include_dirs = ["nlohmann"],
        targets = {"nlohmann_json": ["nlohmann_json"]},
    )
    _declare(
        system_library,
        "abseil",
        include_dirs = ["absl"],
        targets = ABSEIL_COMPONENTS,
    )

    # Only this project's own tests use GoogleTest; a repository is fetched
    # only when something built needs it.
    _declare(
        system_library,
        "googletest",
        extra_linkopts = ["-pthread"],
        include_dirs = [
            "gmock",
            "gtest",
        ],
        targets = {"gtest_main": [
            "gmock",
            "gtest_main",
        ]},
    )
