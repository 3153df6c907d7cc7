"""The tests run against the library `make` built: BATCHFIT_TEST_BUILD (set by `make test`)
or the checkout's build/ directory."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("BATCHFIT_TEST_BUILD", ROOT / "build"))
os.environ.setdefault("BATCHFIT_LIBRARY", str(BUILD / "libbatchfit.so.0"))
sys.path.insert(0, str(ROOT / "python"))
