"""``python -m segstruct``: the ``segstruct`` command line."""
import sys

from segstruct.cli import main

sys.exit(main())
