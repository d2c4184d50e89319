"""``python -m iglearn.cli``: the ``iglearn`` command."""

from iglearn.cli import command

command()
