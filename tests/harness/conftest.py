import sys
from pathlib import Path

# The helper modules of this folder (buggy servers, hostile targets) import by name.
sys.path.insert(0, str(Path(__file__).parent))
