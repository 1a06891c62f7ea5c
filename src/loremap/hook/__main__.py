"""`python -m loremap.hook <event>`, the same as the `loremap-hook` console script."""

import sys

from loremap.hook import main

sys.exit(main())
