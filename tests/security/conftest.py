import sys
from pathlib import Path

# zmtp_probe.py (a hand-driven ZMTP client) lives here; suite_helpers.py in tests/harness.
sys.path.insert(0, str(Path(__file__).parent.parent / "harness"))
sys.path.insert(0, str(Path(__file__).parent))
