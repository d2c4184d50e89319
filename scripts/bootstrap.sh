#!/usr/bin/env bash
# Creates .venv and installs iglearn (editable) with its test tools, once per change of
# pyproject.toml. Sourced by the other scripts; safe to run again.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
stamp="$venv/.iglearn-installed"
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -e "$root[${IGLEARN_EXTRAS:-dev}]"
    touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
