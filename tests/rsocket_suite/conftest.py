import sys
from pathlib import Path

# suite_helpers (tests/harness) imports by name.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
sys.path.insert(0, str(Path(__file__).parent))
