"""``python -m rocketkube.common``: the ``rocketkube`` command without its script."""

import sys

from rocketkube.common.cli import main

sys.exit(main())
