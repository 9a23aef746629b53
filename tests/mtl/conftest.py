import sys
from pathlib import Path

# suite_helpers (tests/harness) and buggy_mtl (this folder) import by name.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
sys.path.insert(0, str(Path(__file__).parent))
