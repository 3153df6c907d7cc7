"""The tests run against the library `make` built: BATCHFIT_TEST_BUILD (set by `make test`)
or the checkout's build/ directory. As the C runner does, they test batchfit against its fakes
and simulator, never this machine's driver or its user's settings: those are cleared here, and
a test that wants one sets it."""
import atexit
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("BATCHFIT_TEST_BUILD", ROOT / "build"))
# What the tests run besides the library (`make test-python` builds it all; `make all` builds
# the CLI and the library only, and the tests then failed on "no such file" and a GPU count).
_NEEDED = [BUILD / "libbatchfit.so.0", BUILD / "batchfit", BUILD / "tests" / "childtool",
           BUILD / "fake" / "libcuda.so.1", BUILD / "fake" / "libnvidia-ml.so.1"]
_MISSING = [str(p) for p in _NEEDED if not p.exists()]
if _MISSING:
    raise pytest.UsageError(f"the Python tests need {', '.join(_MISSING)}: run `make "
                            f"test-python` (or `make test`), which builds them and runs these "
                            f"tests")
# The library under test, whatever an installed batchfit's user set.
os.environ["BATCHFIT_LIBRARY"] = str(BUILD / "libbatchfit.so.0")
for _name in ("VRAM_LIMIT_GB", "BATCHFIT_VRAM_LIMIT_GB", "CUDA_VISIBLE_DEVICES",
              "BATCHFIT_MPI_LIBRARY", "BATCHFIT_CACHE_DIR", "XDG_CACHE_HOME"):
    os.environ.pop(_name, None)
os.environ["BATCHFIT_CUDA_LIBRARY"] = "/nonexistent/libcuda.so.1"
os.environ["BATCHFIT_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1"
# A cache of the session's own, so a probe that caches never writes the user's.
os.environ["BATCHFIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="batchfit-pytest-cache-")
atexit.register(shutil.rmtree, os.environ["BATCHFIT_CACHE_DIR"], True)
sys.path.insert(0, str(ROOT / "python"))
# Ctrl-C as an interactive Python has it: started as a background job of a shell without job
# control (`make test &` in a script, a CI runner's step), Python inherits SIGINT ignored and
# installs no KeyboardInterrupt, and the tests of Ctrl-C during a probe saw none raised.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
