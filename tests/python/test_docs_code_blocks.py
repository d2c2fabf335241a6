"""Runs the code blocks of README.md, CONTRIBUTING.md, docs/*.md and the agent
skills, and checks their relative links, so the documentation cannot drift
from the code.

The convention (CONTRIBUTING.md, "Code blocks in documentation"): a marker is
an HTML comment on the last non-blank line before a fenced block.

- ```python blocks run, each as a program of its own in a fresh interpreter,
  unless marked <!-- test: skip (reason) -->.
- ```sh / ```bash, ```cpp and ```starlark blocks must be marked:
  <!-- test: run --> (sh/bash only: runs with bash -euo pipefail in the
  repository root), <!-- test: same-as PATH --> (the block is exactly the
  file PATH, which is built and run elsewhere), or
  <!-- test: skip (reason) --> (illustrative).
- Other fences (```json, ```text, a bare ```) are data or output: never run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted(
    [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    + list((ROOT / "docs").glob("*.md"))
    + list((ROOT / "skills").glob("*/SKILL.md"))
)

RUN_BY_DEFAULT = {"python"}
MUST_BE_MARKED = {"sh", "bash", "shell", "console", "cpp", "c++", "cc", "c", "starlark", "bzl"}
RUNNABLE_SHELL = {"sh", "bash", "shell"}

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>```+|~~~+)\s*(?P<info>[^`\s]*)")
_MARKER = re.compile(r"^\s*<!--\s*test:\s*(?P<action>run|skip|same-as)\b\s*(?P<argument>.*?)\s*-->\s*$")


@dataclass
class Block:
    document: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    action: str | None  # run, skip, same-as or None (no marker)
    argument: str

    @property
    def id(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def extract_blocks(document: Path) -> list[Block]:
    lines = document.read_text(encoding="utf-8").splitlines()
    blocks = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        fence, indent = match["fence"], match["indent"]
        start = index
        body = []
        index += 1
        while index < len(lines) and not re.match(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[index]):
            line = lines[index]
            body.append(line[len(indent) :] if line.startswith(indent) else line)
            index += 1
        index += 1  # the closing fence
        previous = start - 1
        while previous >= 0 and not lines[previous].strip():
            previous -= 1
        marker = _MARKER.match(lines[previous]) if previous >= 0 else None
        blocks.append(
            Block(
                document=document,
                line=start + 1,
                language=match["info"].lower(),
                code="\n".join(body) + "\n",
                action=marker["action"] if marker else None,
                argument=marker["argument"] if marker else "",
            )
        )
    return blocks


ALL_BLOCKS = [block for document in DOCUMENTS for block in extract_blocks(document)]


def _blocks(predicate):
    chosen = [block for block in ALL_BLOCKS if predicate(block)]
    return pytest.mark.parametrize("block", chosen, ids=[block.id for block in chosen])


def _environment() -> dict[str, str]:
    # The blocks see the library and package that tools/test points at.
    env = dict(os.environ)
    python_dir = str(ROOT / "python")
    if python_dir not in env.get("PYTHONPATH", "").split(os.pathsep):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [python_dir, env.get("PYTHONPATH")]))
    return env


def test_extractor_reads_fences_and_markers(tmp_path: Path):
    document = tmp_path / "page.md"
    document.write_text(
        "Text.\n\n"
        "```python\nprint(1)\n```\n\n"
        "<!-- test: skip (a fragment) -->\n\n"
        "```cpp\nint x;\n```\n"
        "<!-- test: same-as examples/x.cc -->\n"
        "````sh\necho '```'\n````\n"
        "   ```json\n   {}\n   ```\n"
    )
    blocks = extract_blocks(document)
    assert [(b.line, b.language, b.action, b.argument, b.code) for b in blocks] == [
        (3, "python", None, "", "print(1)\n"),
        (9, "cpp", "skip", "(a fragment)", "int x;\n"),
        (13, "sh", "same-as", "examples/x.cc", "echo '```'\n"),
        (16, "json", None, "", "{}\n"),
    ]


def test_documents_are_found():
    names = {str(document.relative_to(ROOT)) for document in DOCUMENTS}
    assert {"README.md", "docs/index.md", "docs/python.md", "docs/bazel.md"} <= names
    assert any(block.language == "python" and block.action is None for block in ALL_BLOCKS)


def test_every_code_block_is_run_or_marked():
    problems = []
    for block in ALL_BLOCKS:
        if block.action == "run" and block.language not in RUNNABLE_SHELL:
            problems.append(f"{block.id}: <!-- test: run --> is for sh/bash blocks; ```{block.language} cannot be run")
        if block.action is None and block.language in MUST_BE_MARKED - RUN_BY_DEFAULT:
            problems.append(
                f"{block.id}: a ```{block.language} block needs a marker on the line before it: "
                "<!-- test: run -->, <!-- test: same-as PATH --> or <!-- test: skip (reason) --> "
                "(CONTRIBUTING.md)"
            )
        if block.action == "same-as" and not block.argument:
            problems.append(f"{block.id}: <!-- test: same-as --> needs a file path")
    assert not problems, "\n".join(problems)


@_blocks(lambda block: block.language in RUN_BY_DEFAULT and block.action is None)
def test_python_block_runs(block: Block, tmp_path: Path):
    result = subprocess.run(
        [sys.executable, "-c", block.code],
        cwd=tmp_path,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"{block.id} failed:\n{block.code}\n{result.stdout}\n{result.stderr}"


@_blocks(lambda block: block.action == "run" and block.language in RUNNABLE_SHELL)
def test_shell_block_runs(block: Block):
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code],
        cwd=ROOT,
        env=_environment(),
        capture_output=True,
        text=True,
        # A hang guard, not a speed limit: a block may run a Bazel build,
        # which on a cold tree and a slow or loaded machine compiles for many
        # minutes (600 s was not enough on 2 shared cores).
        timeout=3600,
    )
    assert result.returncode == 0, f"{block.id} failed:\n{block.code}\n{result.stdout}\n{result.stderr}"


@_blocks(lambda block: block.action == "same-as")
def test_block_is_the_file_it_shows(block: Block):
    path = ROOT / block.argument
    assert path.is_file(), f"{block.id}: {block.argument} does not exist"
    assert block.code == path.read_text(encoding="utf-8"), (
        f"{block.id} differs from {block.argument}; copy the file into the document"
    )


_LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _outside_code(document: Path) -> str:
    text = document.read_text(encoding="utf-8")
    return re.sub(r"^ {0,3}(```+|~~~+).*?^ {0,3}\1\s*$", "", text, flags=re.M | re.S)


@pytest.mark.parametrize("document", DOCUMENTS, ids=[str(d.relative_to(ROOT)) for d in DOCUMENTS])
def test_relative_links_resolve(document: Path):
    problems = []
    for match in _LINK.finditer(_outside_code(document)):
        target = match["target"]
        if re.match(r"^[a-z]+:", target):
            continue  # http:, https:, mailto:
        path_text, _, anchor = target.partition("#")
        path = (document.parent / path_text).resolve() if path_text else document
        if not path.exists():
            problems.append(f"{target}: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} does not exist")
            continue
        if anchor and path.suffix == ".md":
            headings = re.findall(r"^#+\s+(.*)$", _outside_code(path), flags=re.M)
            if anchor not in {_slug(heading) for heading in headings}:
                problems.append(f"{target}: {path.name} has no heading #{anchor}")
    assert not problems, f"{document.relative_to(ROOT)}:\n" + "\n".join(problems)
