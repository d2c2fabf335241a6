"""Wraps C++ libraries installed from Debian `-dev` packages as Bazel repositories.

One repository per package, one `cc_library` per component of it, as the
library's own Bazel build would have them (abseil's `@abseil//:status`,
`@abseil//:strings`, ...). A component's link flags come from pkg-config at
fetch time, transitively, so the same WORKSPACE works on Debian 12 and 13
even where a library was split into different pieces. The headers of a
package are one private target every component shares: the packages'
headers include each other across components.
"""

def _pkg_config_libs(ctx, pkg_config, modules):
    result = ctx.execute([pkg_config, "--libs"] + modules)
    if result.return_code != 0:
        fail("system_library(%s): pkg-config could not find %s (run tools/setup):\n%s" %
             (ctx.name, ", ".join(modules), result.stderr))
    return [flag for flag in result.stdout.strip().split(" ") if flag]

def _system_library_impl(ctx):
    pkg_config = ctx.which("pkg-config")
    if not pkg_config:
        fail("system_library(%s): pkg-config is missing; run tools/setup" % ctx.name)

    for directory in ctx.attr.include_dirs:
        if not ctx.path(ctx.attr.include_root + "/" + directory).exists:
            fail("system_library(%s): %s/%s is missing; run tools/setup" %
                 (ctx.name, ctx.attr.include_root, directory))
        ctx.symlink(ctx.attr.include_root + "/" + directory, directory)

    build = [
        'package(default_visibility = ["//visibility:public"])',
        "",
        "cc_library(",
        '    name = "headers",',
        "    hdrs = glob([%s])," % ", ".join(['"%s/**"' % d for d in ctx.attr.include_dirs]),
        '    visibility = ["//visibility:private"],',
        ")",
    ]
    for name, modules in sorted(ctx.attr.targets.items()):
        linkopts = _pkg_config_libs(ctx, pkg_config, modules) if modules else []
        build += [
            "",
            "cc_library(",
            "    name = %s," % repr(name),
            "    linkopts = %s," % repr(linkopts + ctx.attr.extra_linkopts),
            '    deps = [":headers"],',
            ")",
        ]
    ctx.file("BUILD.bazel", "\n".join(build) + "\n")

system_library = repository_rule(
    implementation = _system_library_impl,
    attrs = {
        # Target name -> the pkg-config modules it links (none: headers only).
        "targets": attr.string_list_dict(mandatory = True),
        "include_root": attr.string(default = "/usr/include"),
        "include_dirs": attr.string_list(mandatory = True),
        "extra_linkopts": attr.string_list(),
    },
    local = True,
)
