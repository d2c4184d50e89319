"""Release hygiene: ``python -m build`` makes a wheel and an sdist that install into a fresh
virtual environment, where ``iglearn --version`` works, and from the wheel a small fit.

To stay offline and fast, the fresh environments install iglearn itself (``--no-deps``) and
find its dependencies (torch, numpy, ...) in this environment's site-packages through a
``.pth`` file placed after their own; the test checks that iglearn is imported from the
installed package, not from the source tree."""

import json
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

import iglearn

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def run(*args: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def fresh_environment(folder: Path) -> Path:
    """A new virtual environment whose own site-packages come first; the running
    environment's site-packages (iglearn's dependencies) are appended after them."""
    venv.EnvBuilder(with_pip=False).create(folder)
    python = folder / "bin" / "python"
    purelib = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    (Path(purelib.strip()) / "zz_dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, ROOT)
    return out


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_built_package_installs_and_runs_in_a_fresh_environment(dist, tmp_path, kind):
    [package] = dist.glob("*.whl" if kind == "wheel" else "*.tar.gz")
    python = fresh_environment(tmp_path / "env")
    run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
        "--no-build-isolation", "--no-index", package)
    where = run(python, "-c", "import iglearn, importlib.resources as r; print(iglearn.__file__);"
                "print(r.files('iglearn').joinpath('py.typed').is_file())").split()
    assert Path(where[0]).is_relative_to(tmp_path / "env") and where[1] == "True"
    command = tmp_path / "env" / "bin" / "iglearn"
    assert run(command, "--version").split()[-1] == iglearn.__version__
    if kind == "sdist":  # the same files as the wheel, which runs the fit below
        return
    run(command, "simulate", "digits", "--samples", "1500", "--out", "log.npz",
        "--test-out", "test.npz", cwd=tmp_path)
    fitted = json.loads(run(command, "fit", "log.npz", "--out", "model", "--epochs", "4",
                            cwd=tmp_path))
    assert fitted["samples"] == 1500
    accuracy = json.loads(run(command, "evaluate", "model", "test.npz", cwd=tmp_path))
    assert accuracy["accuracy"] > 0.5
