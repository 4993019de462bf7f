"""``python -m polymagic run|cuda FILE.c [options]`` (see :mod:`polymagic.cli`)."""
import sys

from .cli import main

sys.exit(main())
