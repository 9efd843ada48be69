"""``python -m regions.otsserver``: the same as the ``regions-server`` script."""
import sys

from regions.otsserver.cli import main

sys.exit(main())
