"""``python -m rocketkube.launcher``: the ``rocketkube`` command without its script."""

import sys

from rocketkube.launcher.cli import main

sys.exit(main())
