"""`python -m checkpoints inspect PATH`: see `trainer.checkpoints.__main__`."""

import sys

from trainer.checkpoints.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
