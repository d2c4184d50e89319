#!/usr/bin/env bash
# Creates .venv and installs iglearn (editable) with the extras in $IGLEARN_EXTRAS, again only
# when pyproject.toml changes. Sourced by the other scripts; safe to run again.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
extras="${IGLEARN_EXTRAS:-}"
stamp="$venv/.installed-${extras//,/-}"
if [ ! -x "$venv/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -e "$root${extras:+[$extras]}"
    touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
