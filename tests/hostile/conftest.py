import sys
from pathlib import Path

# hostile.py and suite_helpers.py live in tests/harness; hostile_targets.py here.
sys.path.insert(0, str(Path(__file__).parent.parent / "harness"))
sys.path.insert(0, str(Path(__file__).parent))
