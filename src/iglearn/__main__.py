"""``python -m iglearn``: the ``iglearn`` command."""

from iglearn.cli import command

command()
