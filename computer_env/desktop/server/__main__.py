"""``python -m computer_env.desktop.server``."""

import sys

from computer_env.desktop.server.cli import main

sys.exit(main())
