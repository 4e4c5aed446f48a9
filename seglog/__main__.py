"""``python -m seglog ...``: the same as the ``seglog`` command."""
import sys

from seglog.cli import main

sys.exit(main())
