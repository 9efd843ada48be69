"""``python -m regions.presplit``: the same as the ``regions-presplit`` script."""

import sys

from .cli import main

sys.exit(main())
