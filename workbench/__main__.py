"""``python -m workbench``: the ``workbench`` command (teaching/cli.py)."""

import sys

from .teaching.cli import main

if __name__ == "__main__":
    sys.exit(main())
