"""Start-up stays light: ``import iglearn``, building the parser, ``iglearn --help`` and the
help of the commands that need no learner import none of torch, pyarrow, ray, starlette,
pandas, matplotlib or scikit-learn."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "pyarrow", "ray", "starlette", "pandas", "matplotlib", "sklearn")


def loaded_after(code: str) -> list[str]:
    """The heavy modules loaded after running ``code`` in a fresh interpreter."""
    script = (f"import sys\n{code}\n"
              f"print('HEAVY=' + __import__('json').dumps("
              f"[m for m in {HEAVY!r} if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    last = [line for line in done.stdout.splitlines() if line.startswith("HEAVY=")]
    assert last, done.stdout + done.stderr
    return json.loads(last[-1][len("HEAVY="):])


def test_import_iglearn_is_light_and_its_names_load_on_use():
    assert loaded_after("import iglearn; iglearn.__version__; dir(iglearn)") == []
    assert "torch" in loaded_after("from iglearn import BatchIGL; BatchIGL()")
    import iglearn

    assert "BatchIGL" in dir(iglearn) and iglearn.IGLearnError.__name__ == "IGLearnError"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        iglearn.nothing  # noqa: B018


def test_building_the_parser_imports_no_heavy_library():
    assert loaded_after("from iglearn.cli import build_parser; build_parser()") == []


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["serve", "--help"],
                                  ["reproduce", "--help"], ["simulate", "--help"],
                                  ["convert", "--help"], ["load", "--help"],
                                  ["demo", "--help"]])
def test_help_and_version_import_no_heavy_library(argv):
    code = ("from iglearn.cli import main\n"
            f"assert main({argv!r}) == 0")
    assert loaded_after(code) == []


def test_a_command_still_builds_its_options_when_parsed(capsys):
    from iglearn.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["simulate", "digits", "--samples", "5", "--out", "x.npz"])
    assert (args.env, args.samples, args.policy) == ("digits", 5, "uniform")
