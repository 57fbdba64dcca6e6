"""``python -m crawler.cli``: the ``crawler`` command."""

from __future__ import annotations

import sys

from crawler.cli.main import main

sys.exit(main())
