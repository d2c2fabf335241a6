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

    # C++ libraries from Debian's -dev packages.
    _declare(
        system_library,
        "nlohmann_json",
        include_dirs = ["nlohmann"],
        pkg_config_modules = ["nlohmann_json"],
        target_name = "nlohmann_json",
    )
    _declare(
        system_library,
        "abseil",
        include_dirs = ["absl"],
        pkg_config_modules = [
            "absl_flags",
            "absl_flags_parse",
            "absl_flat_hash_map",
            "absl_int128",
            "absl_status",
            "absl_statusor",
            "absl_str_format",
            "absl_strings",
            "absl_synchronization",
        ],
        target_name = "abseil",
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
        pkg_config_modules = [
            "gmock",
            "gtest_main",
        ],
        target_name = "gtest_main",
    )
