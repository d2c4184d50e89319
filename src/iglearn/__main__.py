"""``python -m iglearn``: the ``iglearn`` command."""

import sys

from iglearn.cli import main

sys.exit(main())
