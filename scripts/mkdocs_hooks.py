"""MkDocs hook: every page under docs/guides/ appears under "User guides" in the navigation,
also those that mkdocs.yml does not list, titled by their first heading. A guide added later
needs no edit here, and the navigation never names a page that does not exist."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("-", " ").capitalize()


def on_config(config: Any) -> Any:
    """Append the unlisted guides to the "User guides" section of the navigation."""
    docs = Path(config["docs_dir"])
    for section in config["nav"] or []:
        if isinstance(section, dict) and "User guides" in section:
            entries = section["User guides"]
            listed = {page for entry in entries for page in entry.values()}
            for path in sorted((docs / "guides").glob("*.md")):
                page = f"guides/{path.name}"
                if page not in listed:
                    entries.append({_title(path): page})
    return config
