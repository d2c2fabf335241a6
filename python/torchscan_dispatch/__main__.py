"""``python -m torchscan_dispatch``: see torchscan_dispatch.cli."""

import sys

from torchscan_dispatch.cli import main

sys.exit(main())
