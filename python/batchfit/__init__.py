"""batchfit: find the largest batch size that fits, by measuring it.

A thin, typed layer over libbatchfit (ctypes): the search, the decision, the margin, the cache
and the JSON are the library's. The API mirrors the trainer libraries it learned from::

    result = batchfit.measure_batch_size(make_step,
                                         max_batch_size=batchfit.requested_batch_size(hp))
    print(result.batch_size)
"""
from ._core import (REQUESTED_BATCH_SIZE, VRAM_LIMIT_GB_FLAG, VRAM_LIMIT_GB_HELP, PeakBytes,
                    TrialOverBudget,
                    add_vram_limit_argument, is_out_of_memory, limit_cuda_memory,
                    measure_batch_size, parse_size, probe_batch_size, probe_command,
                    requested_batch_size, resolve_vram_limit, version)
from ._errors import (Aborted, BatchfitError, DeviceError, InvalidArgument, MinimumDoesNotFit,
                      NoDevice, NoMemory, NotFound, OutputError, ParseError, TrialError,
                      TrialLimit)
from ._recover import Plan, Recovery
from ._result import Fit, Result, Trial

__version__ = "0.1.0"

__all__ = [
    "REQUESTED_BATCH_SIZE", "VRAM_LIMIT_GB_FLAG", "VRAM_LIMIT_GB_HELP", "PeakBytes",
    "TrialOverBudget",
    "add_vram_limit_argument",
    "is_out_of_memory", "limit_cuda_memory", "measure_batch_size", "parse_size",
    "probe_batch_size", "probe_command", "requested_batch_size", "resolve_vram_limit", "version",
    "Aborted", "BatchfitError", "DeviceError", "InvalidArgument", "MinimumDoesNotFit",
    "NoDevice", "NoMemory", "NotFound", "OutputError", "ParseError", "TrialError", "TrialLimit",
    "Plan",
    "Recovery", "Fit", "Result", "Trial",
]
