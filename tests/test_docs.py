"""Every code block of the README and of the documentation pages runs as written, so that no
snippet can rot.

Each page's ```python, ```bash, ```sh and ```console blocks run in the order they appear, in one
fresh temporary folder per page: the Python blocks share one namespace (a later block may use
what an earlier one defined), the shell blocks run in bash (``set -euo pipefail``) with the
``iglearn`` command and ``python`` of this interpreter first on ``PATH``, and a ```console
block runs its ``$ `` lines. Output and files belong in ```text, ```json or ```toml blocks,
which are not run. A failure names the page and the line of the block.

An HTML comment on the line before a block says when it cannot run everywhere:

- ``<!-- docs-test: skip (reason) -->``: never run here (an install, a cluster, a system-wide
  server, a run of many minutes); the reason is shown in the test report.
- ``<!-- docs-test: slow -->``: runs in the page's ``slow`` test only.
- ``<!-- docs-test: needs-mnist -->``: runs in the page's ``slow`` test when ``IGLEARN_DATA``
  points at the MNIST files (otherwise that test is skipped).

The quick test of a page runs its unmarked blocks; the ``slow`` test (for pages with slow or
MNIST blocks) runs every block that is not skipped.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import real_mnist_dir

ROOT = Path(__file__).resolve().parents[1]
README_LIMIT = 12 * 1024
RUN = {"python", "bash", "sh", "console"}
INERT = {"text", "json", "toml", "bibtex", "yaml", "html", "ini"}
KINDS = {"skip", "slow", "needs-mnist"}
FENCE = re.compile(r"^(\s*)```([\w+-]*)\s*$")
MARK = re.compile(r"^\s*<!--\s*docs-test:\s*([\w-]+)\s*(?:\((.*)\))?\s*-->\s*$")
SHELL_TIMEOUT = 600


@dataclass(frozen=True)
class Block:
    page: str
    line: int          # the line of the opening fence, from 1
    lang: str
    code: str
    kind: str | None   # None, or one of KINDS
    reason: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """README.md and every page of the docs site but the API reference (mkdocstrings
    directives, no code)."""
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if "api" not in p.relative_to(
        ROOT / "docs").parts)
    return [ROOT / "README.md", *docs]


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of one Markdown page, with the docs-test mark before each."""
    name = path.relative_to(ROOT).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, lang = fence.group(1), fence.group(2).lower()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{name}:{start + 1}: the code block is never closed")
        i += 1
        kind, reason = None, ""
        before = start - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        mark = MARK.match(lines[before]) if before >= 0 else None
        if mark:
            kind, reason = mark.group(1), (mark.group(2) or "").strip()
            if kind not in KINDS:
                raise AssertionError(f"{name}:{before + 1}: unknown docs-test mark {kind!r} "
                                     f"(one of {sorted(KINDS)})")
            if kind == "skip" and not reason:
                raise AssertionError(f"{name}:{before + 1}: a docs-test skip says why, "
                                     "<!-- docs-test: skip (reason) -->")
        found.append(Block(name, start + 1, lang, "\n".join(body) + "\n", kind, reason))
    return found


ALL = {path.relative_to(ROOT).as_posix(): blocks(path) for path in pages()}
PAGES = sorted(page for page, found in ALL.items() if any(b.lang in RUN for b in found))
FULL = sorted(page for page in PAGES
              if any(b.kind in ("slow", "needs-mnist") and b.lang in RUN for b in ALL[page]))


def test_readme_is_at_most_12_kb():
    size = (ROOT / "README.md").stat().st_size
    assert size <= README_LIMIT, f"README.md is {size} bytes, more than {README_LIMIT}"


def test_readme_links_lead_to_files():
    """The site checks its own links (mkdocs build --strict); the README is not on it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)[^)]*\)", text)
    broken = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
    assert targets and not broken, f"README.md links to missing files: {broken}"


def test_every_block_says_its_language():
    """A block without a language, or with one the test does not know, is neither run nor
    knowingly left alone."""
    unknown = [f"{b.where}: ```{b.lang}" for found in ALL.values() for b in found
               if b.lang not in RUN | INERT]
    assert not unknown, "blocks of unknown language (use python, bash, sh, console, or " \
                        "text/json/toml for output and files): " + ", ".join(unknown)


def test_marks_are_on_runnable_blocks():
    stray = [b.where for found in ALL.values() for b in found if b.kind and b.lang not in RUN]
    assert not stray, f"docs-test marks before blocks that are never run: {stray}"


def test_docs_home_names_every_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["optional-dependencies"]
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    missing = [extra for extra in extras if f"`{extra}`" not in home]
    assert not missing, f"docs/index.md does not name the extras {missing}"


def test_every_page_is_read():
    assert "README.md" in PAGES and "docs/index.md" in PAGES


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A fresh folder with `iglearn` and `python` (this interpreter) first on PATH."""
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    for name, args in (("iglearn", "-m iglearn"), ("python", "")):
        tool = bin_dir / name
        tool.write_text(f'#!/bin/sh\nexec "{sys.executable}" {args} "$@"\n')
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def console_commands(code: str) -> str:
    """The commands of a console block: its `$ ` lines (output lines are not run)."""
    return "\n".join(line[2:] for line in code.splitlines() if line.startswith("$ ")) + "\n"


def run_block(block: Block, namespace: dict, work: Path) -> None:
    if block.lang == "python":
        # Padded so that a traceback names the page's own line numbers.
        source = "\n" * block.line + block.code
        try:
            exec(compile(source, block.page, "exec"), namespace)  # noqa: S102
        except Exception as error:
            pytest.fail(f"{block.where}: the python block failed: "
                        f"{type(error).__name__}: {error}")
        return
    script = console_commands(block.code) if block.lang == "console" else block.code
    try:
        done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], cwd=work,
                              capture_output=True, text=True, timeout=SHELL_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.where}: the {block.lang} block ran more than {SHELL_TIMEOUT} s")
    sys.stdout.write(done.stdout)
    if done.returncode != 0:
        pytest.fail(f"{block.where}: the {block.lang} block exited with {done.returncode}:\n"
                    f"{done.stderr[-3000:]}")


def run_page(page: str, work: Path, kinds: set[str | None]) -> list[str]:
    """Run the page's blocks whose mark is in `kinds`, in order; the blocks run. The Python
    blocks import modules from the page's folder, as a script run there would."""
    namespace: dict = {"__name__": "__docs__"}
    ran = []
    sys.path.insert(0, str(work))
    known = set(sys.modules)
    try:
        for block in ALL[page]:
            if block.lang in RUN and block.kind in kinds:
                run_block(block, namespace, work)
                ran.append(block.where)
    finally:
        sys.path.remove(str(work))
        for name in set(sys.modules) - known:
            if str(getattr(sys.modules[name], "__file__", None) or "").startswith(str(work)):
                del sys.modules[name]
    return ran


@pytest.mark.filterwarnings("error::iglearn.learners.batch_igl.IdentifiabilityWarning")
@pytest.mark.parametrize("page", PAGES)
def test_page_blocks_run(page, workdir):
    """The unmarked blocks of each page; a snippet whose fit warns that it may not ground (a
    log too small to show a reader) fails."""
    run_page(page, workdir, {None})


@pytest.mark.slow
@pytest.mark.parametrize("page", FULL)
def test_page_blocks_run_in_full(page, workdir):
    """Every block of a page that has slow or MNIST blocks, but those marked skip."""
    if any(b.kind == "needs-mnist" for b in ALL[page]) and real_mnist_dir() is None:
        pytest.skip(f"{page} has MNIST blocks: set IGLEARN_DATA to the MNIST folder")
    run_page(page, workdir, {None, "slow", "needs-mnist"})
