"""One command-line model for both command lines (tools/cli_model.h).

`torchscan` parses its argv with the model, and `python -m torchscan_dispatch`
with the same parser through the extension module (parse_command_line). The
command lines generated here from the model's table (command_line_options)
must parse alike on both and run alike through both real commands: the same
options accepted, the same --help lines, the same one-line usage errors.
Python runs in this process (main()), the C++ command in a subprocess.
"""

import io
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from torchscan_dispatch._library import hooks
from torchscan_dispatch.cli import main

ROOT = Path(__file__).resolve().parents[2]
CLI = os.environ.get("TORCHSCAN_CLI", str(ROOT / "bazel-bin" / "tools" / "torchscan"))
NATIVE = hooks()
OPTIONS = NATIVE.command_line_options()
FRONT_ENDS = {"torchscan": "torchscan", "python": "python -m torchscan_dispatch"}


def cpp_cli(*args):
    # timeout: a hang guard (a run takes well under a second).
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, check=False, timeout=60)


def python_main(*args):
    out, err = io.StringIO(), io.StringIO()
    status = main([str(arg) for arg in args], out, err)
    return status, out.getvalue(), err.getvalue()


def sample(option):
    """A value the option takes, and its parsed form."""
    if option["kind"] == "switch":
        return [], True
    if option["kind"] == "integer":
        return ["7"], 7
    value = option["choices"].split("|")[-1] if option["choices"] else f"value-of-{option['flag']}"
    return [value], [value] if option["kind"] == "repeated" else value


def spellings(option):
    """Every spelling the parsing rules allow, with its parsed value."""
    values, parsed = sample(option)
    flag, underscored = option["flag"], option["flag"].replace("-", "_")
    if not values:
        return [[f"--{flag}"], [f"--{underscored}"], [f"-{flag}=true"]], parsed
    return [[f"--{flag}", *values], [f"--{underscored}={values[0]}"], [f"-{flag}", *values]], parsed


def test_the_table_names_every_field_of_the_parse_result():
    parsed = NATIVE.parse_command_line("python", ["m.pt"])
    assert list(parsed) == ["command", "inputs", "help", *(option["name"] for option in OPTIONS)]
    assert parsed["mode"] == "full" and parsed["max_depth"] == -1 and parsed["kwarg"] == []


@pytest.mark.parametrize("option", OPTIONS, ids=[option["flag"] for option in OPTIONS])
def test_every_option_parses_the_same_on_both_command_lines(option):
    forms, parsed = spellings(option)
    command = reading_command(option)
    prefix = {"": ["m.pt"], "compare": ["compare", "a", "b"], "merge": ["merge", "a"]}.get(command, ["roofline", "r"])
    if command == "roofline" and option["flag"] != "device-model":
        prefix += ["--device-model", "B200"]
    for form in forms:
        results = {}
        for front_end in FRONT_ENDS:
            if not option[front_end]:
                with pytest.raises(ValueError, match=f"^--{option['flag']} is an option of "):
                    NATIVE.parse_command_line(front_end, [*prefix, *form])
                continue
            result = NATIVE.parse_command_line(front_end, [*prefix, *form])
            assert result[option["name"]] == parsed, form
            results[front_end] = result
        if len(results) == 2:
            assert results["torchscan"] == results["python"]


def reading_command(option):
    """A command line prefix of a command that reads ``option`` and would
    next read an absent file: compare when it reads the option, else the
    analysis, roofline or merge."""
    for command in ("compare", "", "roofline", "merge"):
        if command in option["commands"]:
            return command
    raise AssertionError(f"no command reads --{option['flag']}")


@pytest.mark.parametrize("option", OPTIONS, ids=[option["flag"] for option in OPTIONS])
def test_every_option_is_accepted_by_the_real_commands(tmp_path, option):
    # The option on a command that reads it, given a file that is absent: an
    # accepted option gets as far as reading the file, on both commands,
    # with the same line.
    if option["name"] == "list_examples":
        pytest.skip("--list-examples replaces the command (tests/python/test_cli.py runs it)")
    forms, _ = spellings(option)
    # An analysis checks its options' values before it reads the model.
    valid = {"input-shape": "3,8,8", "dtype": "float32", "device": "cpu", "kwarg": "a=1", "import": "json"}
    if option["flag"] in valid:
        forms = [[word.replace(f"value-of-{option['flag']}", valid[option["flag"]]) for word in form] for form in forms]
    absent = tmp_path / "absent.json"
    command = reading_command(option)
    inputs = {"compare": [absent, absent], "": [absent], "roofline": [absent], "merge": [absent]}[command]
    needs = ["--device-model", "B200"] if command == "roofline" and option["flag"] != "device-model" else []
    expected = f"torchscan: no such file: {absent}\n"
    for form in forms:
        argv = [*form, *([command] if command else []), *inputs, *needs]
        if option["flag"] == "kwarg":  # read: a factory's keyword, and the file is no factory
            expected_python = (2, "", f"torchscan: '{absent}' is not an import path to a factory (expected package.module:callable)\n")
            assert python_main(*argv) == expected_python, form
            continue
        cpp = cpp_cli(*argv)
        if option["flag"] == "example":  # read: it conflicts with the model file
            assert (cpp.returncode, cpp.stderr) == (2, "torchscan: pass either MODEL.pt or --example, not both\n")
            assert python_main(*argv)[2].endswith("is an option of torchscan, not of python -m torchscan_dispatch\n")
            continue
        python = python_main(*argv)
        if option["torchscan"]:
            assert (cpp.returncode, cpp.stdout, cpp.stderr) == (2, "", expected), form
        else:
            assert cpp.stderr == f"torchscan: --{option['flag']} is an option of python -m torchscan_dispatch, not of torchscan\n"
        if option["python"]:
            assert python == (2, "", expected), form
        else:
            assert python == (2, "", f"torchscan: --{option['flag']} is an option of torchscan, not of python -m torchscan_dispatch\n")


@pytest.mark.parametrize("option", OPTIONS, ids=[option["flag"] for option in OPTIONS])
def test_a_command_that_does_not_read_an_option_refuses_it_on_both(option):
    values, _ = sample(option)
    for command, inputs in (("compare", ["a", "b"]), ("roofline", ["r"])):
        if command in option["commands"] or not (option["torchscan"] and option["python"]):
            continue
        needs = ["--device-model", "B200"] if command == "roofline" else []
        argv = [command, *inputs, *needs, f"--{option['flag']}", *values]
        expected = f"torchscan: {command} does not take --{option['flag']} (only "
        cpp = cpp_cli(*argv)
        status, out, err = python_main(*argv)
        assert (cpp.returncode, cpp.stdout) == (2, "") and cpp.stderr.startswith(expected), argv
        assert (status, out) == (2, "") and err.startswith(expected), argv
        # The commands named are each command line's own (merge is torchscan's).
        assert err.split(" (")[0] == cpp.stderr.split(" (")[0]


def test_help_of_both_command_lines_is_the_models():
    cpp = cpp_cli("--help")
    assert (cpp.returncode, cpp.stdout, cpp.stderr) == (0, NATIVE.command_line_help("torchscan"), "")
    assert python_main("-h") == (0, NATIVE.command_line_help("python"), "")


def test_help_lists_each_option_of_a_command_line_with_the_same_line_on_both():
    helps = {front_end: NATIVE.command_line_help(front_end).splitlines() for front_end in FRONT_ENDS}
    for option in OPTIONS:
        head = f"  --{option['flag']}{' ' + option['metavar'] if option['metavar'] else ''}  "
        lines = {front_end: [line for line in helps[front_end] if line.startswith(head)] for front_end in FRONT_ENDS}
        for front_end in FRONT_ENDS:
            expected = [head + option["help"]] if option[front_end] else []
            assert lines[front_end] == expected
    commands = [line for line in helps["python"] if line.startswith("  python -m torchscan_dispatch ")]
    assert "  python -m torchscan_dispatch compare BEFORE.json AFTER.json [--json -|PATH] [--html -|PATH] [--folded -|PATH]" in commands


BAD_COMMAND_LINES = [
    ["--jsn", "x", "m.pt"],
    ["m.pt", "--max-depth", "two"],
    ["m.pt", "--max_depth=1.5"],
    ["m.pt", "--strict=maybe"],
    ["m.pt", "--mode", "fast"],
    ["m.pt", "--json"],
    ["m.pt", "--html", "--strict"],
    ["m.pt", "--json", "-", "--folded=-"],
    ["m.pt", "--nojson"],
    ["compare", "a.json"],
    ["compare", "a.json", "b.json", "c.json"],
    ["roofline"],
    ["roofline", "r.json"],
    ["roofline", "r.json", "--device-model", "B200", "--folded", "f"],
    ["compare", "a.json", "b.json", "--strict"],
    ["compare", "a.json", "b.json", "--max-depth", "1"],
]


def parse_error(front_end, argv):
    """The model's one-line error for ``argv`` on ``front_end``, the program
    name written PROGRAM."""
    with pytest.raises(ValueError) as raised:
        NATIVE.parse_command_line(front_end, argv)
    return str(raised.value).replace(FRONT_ENDS[front_end], "PROGRAM")


@pytest.mark.parametrize("argv", BAD_COMMAND_LINES, ids=" ".join)
def test_the_same_bad_command_line_gives_the_same_one_line_error(argv):
    message = parse_error("torchscan", argv)
    assert parse_error("python", argv) == message
    assert "\n" not in message
    cpp, python = cpp_cli(*argv), python_main(*argv)
    assert (cpp.returncode, cpp.stdout, cpp.stderr) == (2, "", "torchscan: " + message.replace("PROGRAM", "torchscan") + "\n")
    assert python == (2, "", "torchscan: " + message.replace("PROGRAM", FRONT_ENDS["python"]) + "\n")


def outcome(front_end, argv):
    try:
        return NATIVE.parse_command_line(front_end, argv)
    except ValueError as error:
        message = str(error)
        assert message and "\n" not in message, argv
        if message.endswith("(--help lists the other commands)"):
            return "the analysis's usage"  # its synopsis is the front end's
        return message.replace(FRONT_ENDS[front_end], "PROGRAM")


def test_random_command_lines_from_the_table_parse_alike_or_fail_with_one_line():
    words = ["m.pt", "compare", "roofline", "-", "--", "7", "x", "--no-such", "structure", "-1"]
    for option in OPTIONS:
        words += [f"--{option['flag']}", f"--{option['flag'].replace('-', '_')}=1"]
    generator = random.Random(29)
    for _ in range(3000):
        argv = [generator.choice(words) for _ in range(generator.randrange(7))]
        cpp, python = outcome("torchscan", argv), outcome("python", argv)
        if isinstance(cpp, dict) and cpp["command"] == "" and not cpp["inputs"] and not cpp["help"]:
            # torchscan's analysis may name no model (--example NAME); Python's needs one.
            assert python == "the analysis's usage" or "is an option of" in python, argv
            continue
        if isinstance(cpp, str) and "is an option of" in cpp or isinstance(python, str) and "is an option of" in python:
            continue  # an option of one command line only
        if isinstance(cpp, str) and " does not take " in cpp and isinstance(python, str):
            if python == "the analysis's usage":
                continue  # Python's analysis needs a model before its options are checked
            # The commands that do take it are each command line's own.
            assert cpp.split(" (")[0] == python.split(" (")[0], argv
            continue
        assert cpp == python, argv


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
