"""``python -m rocketkube.client.admin.cli SUBCOMMAND ...`` (no entry point needed)."""

import sys

from rocketkube.client.admin.cli import main

sys.exit(main())
