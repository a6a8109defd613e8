"""``python -m recon_pipeline.cli``: the `recon` command, as the console script runs it."""

import sys

from recon_pipeline.cli import main

sys.exit(main())
