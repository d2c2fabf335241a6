"""Objects for the libFuzzer tests, compiled by clang in Bazel actions.

Bazel's C++ toolchain here is gcc, and libFuzzer needs clang, so the fuzz
tests (//report:report_fuzz_test, //crawl:crawl_fuzz_test) link objects that
clang compiled from the torch-free sources. Each source is one action of its
own: Bazel runs them beside the rest of the build, caches them, and
compiles a source once for every fuzzer that links it (the report sources
serve both).
"""

def libfuzzer_objects(name, srcs, hdrs):
    """Compiles each of `srcs` (files of this package) for libFuzzer.

    The objects are `<name>/<source>.o`, grouped as the filegroup `name`.
    tools/fuzz/compile_for_libfuzzer.sh has the flags; where clang++ is not
    installed it writes empty objects, and the tests skip, saying so.

    Args:
      name: the filegroup of the objects.
      srcs: the .cc files to compile.
      hdrs: every header they may include (labels or filegroups).
    """
    objects = []
    for src in srcs:
        stem = src[:-len(".cc")]
        out = "%s/%s.o" % (name, stem)
        native.genrule(
            name = "%s_%s" % (name, stem.replace("/", "_")),
            srcs = [src] + hdrs,
            outs = [out],
            cmd = "$(location //tools:fuzz/compile_for_libfuzzer.sh) $(location %s) $@" % src,
            tools = [
                "//tools:fuzz/compile_for_libfuzzer.sh",
                "//tools:fuzz/libfuzzer.sh",
            ],
            testonly = True,
        )
        objects.append(out)
    native.filegroup(
        name = name,
        srcs = objects,
        testonly = True,
    )
