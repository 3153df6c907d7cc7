"""Loading libbatchfit and the ctypes view of its public header.

Only the structs the binding fills in itself are laid out here; every one is
checked against ``batchfit_sizeof()`` of the library actually loaded, so a
header change that moves a field fails at import, not with corrupt memory.
Results are read back through the library's own JSON writer.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_int, c_size_t,
                    c_uint, c_uint64, c_void_p)
from pathlib import Path
from typing import List, Optional

SONAME = "libbatchfit.so.0"

# batchfit_outcome
FITS, OOM, ERROR = 0, 1, 2
MESSAGE_MAX = 256


class Fit(Structure):
    """batchfit_fit: peak = intercept + slope * batch."""
    _fields_ = [("valid", c_int), ("intercept_bytes", c_double), ("bytes_per_sample", c_double),
                ("max_residual_bytes", c_double), ("points", c_uint)]


PROGRESS_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p)


class Options(Structure):
    """batchfit_options."""
    _fields_ = [("struct_size", c_size_t), ("requested_max", c_uint64), ("min_batch", c_uint64),
                ("samples", c_uint64), ("lattice", c_int), ("lattice_multiple", c_uint64),
                ("margin_fraction", c_double), ("margin_bytes", c_uint64),
                ("vram_limit_bytes", c_uint64), ("memory_budget_bytes", c_uint64),
                ("upper_limit", c_uint64), ("max_trials", c_uint), ("strategy", c_int),
                ("peak_spread", c_double), ("first_guess", c_uint64),
                ("cached_batch", c_uint64), ("cached_fit", Fit), ("no_device", c_int),
                ("fallback_batch", c_uint64), ("vram_limit_source", c_char_p),
                ("cache", c_int), ("cache_dir", c_char_p), ("cache_key", c_char_p),
                ("progress", PROGRESS_FN), ("progress_userdata", c_void_p),
                ("parallel", c_uint), ("ranks", c_void_p), ("cached_budget_bytes", c_uint64)]


class StepReport(Structure):
    """batchfit_step_report."""
    _fields_ = [("peak_known", c_int), ("peak_bytes", c_uint64),
                ("message", c_char * MESSAGE_MAX), ("budget_bytes", c_uint64)]


BUILD_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, POINTER(c_void_p), c_void_p, c_size_t)
RUN_FN = CFUNCTYPE(c_int, c_void_p, c_uint64, POINTER(StepReport))
ON_OOM_FN = CFUNCTYPE(None, c_void_p, c_uint64)
RELEASE_FN = CFUNCTYPE(None, c_void_p)


class Step(Structure):
    """batchfit_step."""
    _fields_ = [("struct_size", c_size_t), ("name", c_char_p), ("min_batch", c_uint64),
                ("build", BUILD_FN), ("run", RUN_FN), ("on_oom", ON_OOM_FN),
                ("release", RELEASE_FN)]


class CommandOptions(Structure):
    """batchfit_command_options."""
    _fields_ = [("struct_size", c_size_t), ("argv", POINTER(c_char_p)),
                ("timeout_seconds", c_double), ("kill_grace_seconds", c_double),
                ("watchdog", c_int), ("enforce", c_int), ("crash_is_oom", c_int),
                ("sample_interval", c_double), ("show_output", c_int), ("cgroups", c_int),
                ("oom_patterns", POINTER(c_char_p)), ("vram_limit_text", c_char_p),
                ("enforce_address_space", c_int)]


class RecoverPlan(Structure):
    """batchfit_recover_plan."""
    _fields_ = [("micro_batch", c_uint64), ("accumulation", c_uint),
                ("last_micro_batch", c_uint64), ("effective_batch", c_uint64)]


RESIZE_FN = CFUNCTYPE(c_int, POINTER(RecoverPlan), c_void_p)


class RecoverOptions(Structure):
    """batchfit_recover_options."""
    _fields_ = [("struct_size", c_size_t), ("global_batch", c_uint64), ("micro_batch", c_uint64),
                ("min_batch", c_uint64), ("max_retries", c_uint), ("grow_after", c_uint),
                ("fit", Fit), ("resize", RESIZE_FN), ("userdata", c_void_p)]


LOG_FN = CFUNCTYPE(None, c_int, c_char_p, c_void_p)

_CHECKED = {"batchfit_options": Options, "batchfit_step": Step,
            "batchfit_step_report": StepReport, "batchfit_command_options": CommandOptions,
            "batchfit_fit": Fit, "batchfit_recover_options": RecoverOptions,
            "batchfit_recover_plan": RecoverPlan}

_PROTOTYPES = {
    "batchfit_version_string": (c_char_p, []),
    "batchfit_version_number": (c_uint, []),
    "batchfit_sizeof": (c_size_t, [c_char_p]),
    "batchfit_vram_limit_flag": (c_char_p, []),
    "batchfit_vram_limit_help": (c_char_p, []),
    "batchfit_error_name": (c_char_p, [c_int]),
    "batchfit_format_bytes": (None, [ctypes.c_double, c_char_p, c_size_t]),
    "batchfit_exit_status": (c_int, [c_int]),
    "batchfit_ctx_create": (c_int, [c_void_p, POINTER(c_void_p)]),
    "batchfit_ctx_free": (None, [c_void_p]),
    "batchfit_ctx_set_log": (None, [c_void_p, LOG_FN, c_void_p, c_int]),
    "batchfit_ctx_last_error": (c_char_p, [c_void_p]),
    "batchfit_parse_size": (c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_uint64)]),
    "batchfit_parse_percent": (c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_double)]),
    "batchfit_oom_text": (c_int, [c_void_p, c_char_p, POINTER(c_int), c_char_p, c_size_t]),
    "batchfit_parse_requested_size": (c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_uint64)]),
    "batchfit_parse_strategy": (c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_int)]),
    "batchfit_resolve_vram_limit": (c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_uint64),
                                            POINTER(c_char_p)]),
    "batchfit_device_open": (c_int, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "batchfit_device_free": (None, [c_void_p]),
    "batchfit_device_spec": (c_char_p, [c_void_p]),
    "batchfit_device_kind": (c_char_p, [c_void_p]),
    "batchfit_options_init": (None, [POINTER(Options)]),
    "batchfit_command_options_init": (None, [POINTER(CommandOptions)]),
    "batchfit_probe": (c_int, [c_void_p, POINTER(Options), c_void_p, POINTER(Step), c_void_p,
                               POINTER(c_void_p)]),
    "batchfit_probe_command": (c_int, [c_void_p, POINTER(Options), c_void_p,
                                       POINTER(CommandOptions), POINTER(c_void_p)]),
    "batchfit_result_json": (c_int, [c_void_p, c_void_p, POINTER(c_char_p)]),
    "batchfit_result_svg": (c_int, [c_void_p, c_void_p, POINTER(c_char_p)]),
    "batchfit_result_from_json": (c_int, [c_void_p, c_char_p, c_size_t, POINTER(c_void_p)]),
    "batchfit_result_free": (None, [c_void_p]),
    "batchfit_interrupt": (None, [c_int]),
    "batchfit_interrupt_take": (c_int, []),
    "batchfit_recover_options_init": (None, [POINTER(RecoverOptions)]),
    "batchfit_recover_create": (c_int, [c_void_p, POINTER(RecoverOptions), POINTER(c_void_p)]),
    "batchfit_recover_free": (None, [c_void_p]),
    "batchfit_recover_get": (POINTER(RecoverPlan), [c_void_p]),
    "batchfit_recover_step_ok": (c_int, [c_void_p, POINTER(c_int)]),
    "batchfit_recover_oom": (c_int, [c_void_p, c_uint64]),
}


def _candidates() -> List[str]:
    """Where the library is looked for, in order."""
    found: List[str] = []
    explicit = os.environ.get("BATCHFIT_LIBRARY")
    if explicit:
        return [explicit]
    here = Path(__file__).resolve().parent
    for name in (SONAME, "libbatchfit.so"):
        if (here / name).exists():
            found.append(str(here / name))
    # A source checkout: python/batchfit -> build/.
    checkout = here.parent.parent / "build" / SONAME
    if checkout.exists():
        found.append(str(checkout))
    found.append(SONAME)
    system = ctypes.util.find_library("batchfit")
    if system:
        found.append(system)
    return found


def _load() -> ctypes.CDLL:
    errors = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as exc:
            errors.append(f"{path}: {exc}")
    else:
        raise ImportError("batchfit: cannot load libbatchfit (set BATCHFIT_LIBRARY to its path, "
                          "or build it with make): " + "; ".join(errors))
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    for cname, struct in _CHECKED.items():
        size = lib.batchfit_sizeof(cname.encode())
        if size != ctypes.sizeof(struct):
            raise ImportError(f"batchfit: {cname} is {size} bytes in {lib._name} but "
                              f"{ctypes.sizeof(struct)} in the binding: the library and the "
                              "package are from different versions")
    return lib


lib = _load()
path: Optional[str] = lib._name
