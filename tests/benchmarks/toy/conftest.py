"""The toy benchmarks' modules import each other by name (as a plugin's would), so this
folder is on ``sys.path`` while its tests are collected and run."""

import sys
from pathlib import Path

HERE = str(Path(__file__).parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
