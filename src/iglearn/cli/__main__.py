"""``python -m iglearn.cli``: the ``iglearn`` command."""

import sys

from iglearn.cli import main

sys.exit(main())
