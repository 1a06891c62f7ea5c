"""`python -m loremap` runs the CLI."""

from __future__ import annotations

import sys

from loremap.cli import main

sys.exit(main())
