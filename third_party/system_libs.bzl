"""Wraps C++ libraries installed from Debian `-dev` packages as Bazel repositories.

Link flags come from pkg-config at fetch time, so the same WORKSPACE works on
Debian 12 and 13 even where a library was split into different pieces.
"""

def _system_library_impl(ctx):
    pkg_config = ctx.which("pkg-config")
    if not pkg_config:
        fail("system_library(%s): pkg-config is missing; run tools/setup" % ctx.name)
    result = ctx.execute([pkg_config, "--libs"] + ctx.attr.pkg_config_modules)
    if result.return_code != 0:
        fail("system_library(%s): pkg-config could not find %s (run tools/setup):\n%s" %
             (ctx.name, ", ".join(ctx.attr.pkg_config_modules), result.stderr))
    linkopts = result.stdout.strip().split(" ") + ctx.attr.extra_linkopts
    linkopts = [flag for flag in linkopts if flag]

    for directory in ctx.attr.include_dirs:
        if not ctx.path(ctx.attr.include_root + "/" + directory).exists:
            fail("system_library(%s): %s/%s is missing; run tools/setup" %
                 (ctx.name, ctx.attr.include_root, directory))
        ctx.symlink(ctx.attr.include_root + "/" + directory, directory)

    ctx.file("BUILD.bazel", """
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "{name}",
    hdrs = glob([{globs}]),
    defines = {defines},
    linkopts = {linkopts},
)
""".format(
        name = ctx.attr.target_name,
        globs = ", ".join(['"%s/**"' % d for d in ctx.attr.include_dirs]),
        defines = repr(ctx.attr.defines),
        linkopts = repr(linkopts),
    ))

system_library = repository_rule(
    implementation = _system_library_impl,
    attrs = {
        "target_name": attr.string(mandatory = True),
        "pkg_config_modules": attr.string_list(mandatory = True),
        "include_root": attr.string(default = "/usr/include"),
        "include_dirs": attr.string_list(mandatory = True),
        "defines": attr.string_list(),
        "extra_linkopts": attr.string_list(),
    },
    local = True,
)
