"""``python -m rocketkube.client.admin_cli SUBCOMMAND ...`` (no entry point needed)."""

import sys

from rocketkube.client.admin_cli import main

sys.exit(main())
