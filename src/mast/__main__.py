"""``python -m mast`` runs the command line."""

import sys

from mast.cli import main

sys.exit(main())
