"""``python -m seglog.compactor --config FILE [--once]``."""
import sys

from seglog.compactor.service import main

sys.exit(main(sys.argv[1:]))
