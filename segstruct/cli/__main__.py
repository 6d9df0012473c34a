"""``python -m segstruct.cli``: the ``segstruct`` command line."""
import sys

from segstruct.cli.main import main

sys.exit(main())
