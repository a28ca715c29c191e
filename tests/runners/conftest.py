"""Make the picklable helpers importable by name, also in spawned worker processes."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    # Spawned children receive the parent's sys.path, so they can import the helpers
    # module by the same name whatever pytest import mode is in use.
    sys.path.insert(0, _HERE)
