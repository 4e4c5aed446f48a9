"""``python -m compactor --config FILE [--once]``."""
import sys

from compactor.service import main

sys.exit(main(sys.argv[1:]))
