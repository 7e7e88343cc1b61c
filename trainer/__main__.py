"""`python -m trainer`: the command line (see `trainer.cli`)."""

import sys

from trainer.cli import main

if __name__ == "__main__":
    sys.exit(main())
