"""``python -m retrieval``: the CLI."""

import sys

from retrieval.cli.commands import main

sys.exit(main())
