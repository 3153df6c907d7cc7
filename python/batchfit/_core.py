"""The probes: in-process (a step factory or a plain callable) and child commands, over
batchfit_probe() and batchfit_probe_command(). The search, the decision, the margin, the cache
and the JSON stay in the library; this layer runs the user's Python step when the library asks,
tells out-of-memory from bugs, and turns return codes into exceptions."""
from __future__ import annotations

import ctypes
import decimal
import errno
import gc
import logging
import math
import numbers
import operator
import os
import re
import signal
import sys
import threading
import time
import traceback
from ctypes import byref, c_char_p, c_double, c_int, c_uint64, c_void_p
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _lib
from ._errors import NoMemory, error_for
from ._lib import lib
from ._result import Result

log = logging.getLogger("batchfit")

Size = Union[int, str]

REQUESTED_BATCH_SIZE = "max_batch_size"
"""The hyperparameter that holds the requested maximum (input only: the measured size is
reported as ``batch_size`` and never read back as a bound)."""

VRAM_LIMIT_GB_FLAG: str = lib.batchfit_vram_limit_flag().decode()
VRAM_LIMIT_GB_HELP: str = lib.batchfit_vram_limit_help().decode()

# The library logs each failure at its error level as it fails; that text reaches the caller as
# the exception it raises (or was a condition the library handled, as a cache entry not found),
# so it is logged at DEBUG: at ERROR, Python's last-resort handler printed every error a caller
# caught, and a first cached run's "cache: no entry" as if it had gone wrong.
_LOG_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.DEBUG}

_TRIED = re.compile(r"[Tt]ried to allocate ([0-9.]+) ?(B|KiB|MiB|GiB|TiB|bytes)")
_UNITS = {"B": 1, "bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def is_out_of_memory(exc: BaseException) -> bool:
    """True when ``exc`` means the step ran out of memory: ``MemoryError``,
    ``torch.OutOfMemoryError`` / ``torch.cuda.OutOfMemoryError``, or a ``RuntimeError`` whose
    message carries one of the signatures by which ``batchfit probe -- COMMAND`` reads a child's
    output (the library's table: PyTorch's CUDA and CPU allocators, cuBLAS, cuDNN, including
    its CUDNN_STATUS_NOT_SUPPORTED under memory pressure, and the generic "out of memory" that
    MPS's and XPU's messages carry, ...), so that a step and a command are judged alike; or an
    ``OSError`` with ``errno.ENOMEM`` (a fork, an ``mmap`` or a DataLoader worker refused for
    memory: "Cannot allocate memory", which a command's output is read as too); or an
    exception raised ``from`` one of these (a wrapper's ``raise StepFailed(...) from e``).
    Anything else is a bug, which stops a search."""
    if not isinstance(exc, BaseException):
        raise TypeError(f"is_out_of_memory() takes an exception, not {type(exc).__name__} "
                        f"{exc!r}")
    seen = set()
    while exc is not None and id(exc) not in seen:  # a cause chain may loop
        seen.add(id(exc))
        if _is_out_of_memory_itself(exc):
            return True
        exc = exc.__cause__  # type: ignore[assignment]
    return False


def _is_out_of_memory_itself(exc: BaseException) -> bool:
    if isinstance(exc, (MemoryError, TrialOverBudget)):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
        return True
    torch = sys.modules.get("torch")
    if torch is not None:
        for holder in (torch, getattr(torch, "cuda", None)):
            cls = getattr(holder, "OutOfMemoryError", None)
            if isinstance(cls, type) and isinstance(exc, cls):
                return True
    return isinstance(exc, RuntimeError) and _says_out_of_memory(str(exc))


def _says_out_of_memory(text: str) -> bool:
    data = text.encode("utf-8", "replace").replace(b"\0", b" ")
    matched = ctypes.c_int(0)
    with _Context() as ctx:
        ctx.check(lib.batchfit_oom_text(ctx.ptr, data, ctypes.byref(matched), None, 0))
    return matched.value == 1


class PeakBytes(int):
    """What a step's ``run(batch)`` returns to report the peak it measured itself, in bytes
    (``return batchfit.PeakBytes(n)``). Any other return value (a loss, a count of correct
    predictions) is ignored: taken as bytes, a count made a probe's answer 13 times too large.
    It wins over what batchfit measures itself (``torch.cuda.max_memory_reserved()``, the
    host's high-water mark), as the library's step report does. Values past 2^64 - 1 are
    refused (``ValueError``), not wrapped or dropped."""

    def __new__(cls, value: int) -> "PeakBytes":
        n = operator.index(value)
        _check_peak(n)
        return super().__new__(cls, n)


def _check_peak(n: int) -> None:
    if n < 0:
        raise ValueError(f"PeakBytes: a peak cannot be negative: {n}")
    if n >= 2**64:
        raise ValueError(f"PeakBytes: {n} bytes is too large (at most {2**64 - 1})")


# One in-process probe at a time: on the host the library measures this process (its high-water
# RSS, reset before each trial), which two probes in two threads would share.
_probe_lock = threading.Lock()
_probe_owner: Optional[int] = None


class _OneProbe:
    """The process's one in-process probe at a time. With ``sigint`` installed (the main
    thread), a Ctrl-C while waiting for another thread's probe raises KeyboardInterrupt here,
    without asking the library to stop that probe; once the lock is this call's, it asks the
    library to stop this one."""

    def __init__(self, sigint: Optional["_SigintDuringProbe"] = None) -> None:
        self.sigint = sigint

    def __enter__(self) -> None:
        global _probe_owner
        if _probe_owner == threading.get_ident():
            raise error_for(1, "an in-process probe is already running in this thread (a step "
                               "that starts a probe): the two would measure the same process")
        sigint = self.sigint
        if sigint is None or not sigint.installed:
            _probe_lock.acquire()
        else:
            # The handler never raises here (the user's code is not running): the wait looks
            # at what it recorded, so the lock is either taken or not, never held by an
            # interrupted acquire.
            while not _probe_lock.acquire(timeout=0.05):
                if sigint.pending:
                    raise KeyboardInterrupt
        _probe_owner = threading.get_ident()
        if sigint is not None and sigint.pending:  # came between the acquire and the line above
            lib.batchfit_interrupt(int(signal.SIGINT))

    def __exit__(self, *exc: Any) -> None:
        global _probe_owner
        _probe_owner = None
        _probe_lock.release()


# A KeyboardInterrupt that landed in a log handler, raised again after the library returns.
_log_interrupt = threading.local()


def _take_log_interrupt() -> bool:
    """Whether a log handler of this thread met a KeyboardInterrupt since the last look."""
    pending = bool(getattr(_log_interrupt, "pending", False))
    _log_interrupt.pending = False
    return pending


class _Context:
    """A batchfit_ctx whose log goes to the ``batchfit`` logger."""

    def __init__(self) -> None:
        self.ptr = c_void_p()
        if lib.batchfit_ctx_create(None, byref(self.ptr)) != 0:
            raise NoMemory("batchfit: cannot create a context")
        self._log_fn = _lib.LOG_FN(self._on_log)
        level = log.getEffectiveLevel()
        min_level = 0 if level <= logging.DEBUG else 1 if level <= logging.INFO else 2
        lib.batchfit_ctx_set_log(self.ptr, self._log_fn, None, min_level)

    @staticmethod
    def _on_log(level: int, message: bytes, userdata: Any) -> None:
        try:
            log.log(_LOG_LEVELS.get(level, logging.INFO), "%s",
                    message.decode("utf-8", "replace"))
        except KeyboardInterrupt:
            # Never unwinds through C: the probe is asked to stop, and the interrupt is
            # raised again once the library returns.
            lib.batchfit_interrupt(int(signal.SIGINT))
            _log_interrupt.pending = True
        except BaseException:  # a log line must never unwind through C
            pass

    def error(self) -> str:
        return (lib.batchfit_ctx_last_error(self.ptr) or b"").decode("utf-8", "replace")

    def check(self, rc: int) -> None:
        if rc != 0:
            raise error_for(rc, self.error())

    def close(self) -> None:
        if self.ptr:
            lib.batchfit_ctx_free(self.ptr)
            self.ptr = c_void_p()

    def __enter__(self) -> "_Context":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _text(value: Any, what: str = "a string argument") -> bytes:
    """The library's text for a value given as text or a number. None, bytes' repr and the
    like were parsed as "None" and "b'500MiB'"; a float is written out in full (the library
    reads no exponent: 1e-15 GiB said "expected a positive number")."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "surrogateescape")
    elif isinstance(value, decimal.Decimal) and value.is_finite():
        value = format(value, "f")
    elif isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)) and \
            not _numpy_bool(value):
        # Floats of any kind (numpy's float32 too) written out in full.
        f = float(value)
        value = format(decimal.Decimal(repr(f)), "f") if math.isfinite(f) else repr(f)
    elif isinstance(value, bool) or _numpy_bool(value) or not isinstance(
            value, (str, numbers.Real, os.PathLike, decimal.Decimal)):
        raise TypeError(f"{what}: expected a str or a number, got {type(value).__name__} "
                        f"{value!r}")
    b = str(value).encode("utf-8", "surrogateescape")
    _no_nul(b, what, value)
    return b


def _no_nul(text: Union[str, bytes], what: str, given: Any = None) -> None:
    """C reads a string up to its first NUL: refused, never cut short silently. ``given`` is
    the value as the caller wrote it, when ``text`` is its encoding."""
    if ("\0" if isinstance(text, str) else b"\0") in text:
        shown = text if given is None else given
        raise error_for(1, f"{what}: {shown!r} holds a NUL byte, which would cut it short")


def parse_size(text: Size, what: str = "size") -> int:
    """Bytes from a size such as ``"12GiB"``, ``"1.5 GB"``, ``"4096"`` (the library's parser);
    an int is taken as bytes."""
    if isinstance(text, bool) or _numpy_bool(text):
        raise error_for(9, f"{what}: expected a size, got {text!r}")
    if isinstance(text, decimal.Decimal) and text.is_finite() and text == text.to_integral_value():
        text = int(text)
    text = _plain(text)  # numpy's float32, Fraction: a whole one is a whole number of bytes
    if isinstance(text, float) and text.is_integer():
        text = int(text)  # 1.5e9 is a whole number of bytes
    if isinstance(text, int):
        if text < 0:
            raise error_for(9, f"{what}: a size cannot be negative: {text}")
        if text >= 2**64:
            raise error_for(9, f"{what}: {text} bytes is too large (at most {2**64 - 1})")
        return text
    with _Context() as ctx:
        out = c_uint64()
        ctx.check(lib.batchfit_parse_size(ctx.ptr, _text(text, what), what.encode(), byref(out)))
        return out.value


def requested_batch_size(hyperparameters: Optional[Mapping[str, Any]]) -> Optional[int]:
    """The requested maximum from hyperparameters: ``hyperparameters["max_batch_size"]``.
    Absent, None, ``""`` and 0 mean "the device decides" and give None; anything else must be a
    positive whole number (``InvalidArgument`` quoting the value otherwise, True/False and 2.5
    too; a whole float such as 16.0, as YAML or ``type=float`` give it, is that number).
    ``batch_size`` is
    never read: it is an output. ``hyperparameters`` that is not a mapping (a dict, or anything
    with ``get``) raises ``TypeError``."""
    if hyperparameters is None:
        return None
    if not callable(getattr(hyperparameters, "get", None)):
        raise TypeError(f"hyperparameters: expected a mapping such as a dict, got "
                        f"{hyperparameters!r} ({type(hyperparameters).__name__})")
    if not hyperparameters:
        return None
    return _requested_max(hyperparameters.get(REQUESTED_BATCH_SIZE),
                          f"hyperparameters {REQUESTED_BATCH_SIZE}", 9)


def _requested_max(value: Any, what: str, code: int) -> Optional[int]:
    """A requested maximum as the CLI's --max and a hyperparameters file read it: None, "",
    "none" and 0 are "the device decides" (None); a whole float (16.0, as YAML and argparse's
    type=float give it) is that number; True/False, 2.5 and anything that is no number or
    text ([16], {}) are refused (error code ``code``), naming ``what``."""
    if value is None:
        return None
    value = _plain(value)
    if isinstance(value, (bool, float)) or not isinstance(
            value, (str, bytes, numbers.Real, decimal.Decimal)):
        if isinstance(value, float) and value.is_integer() and value >= 0:
            value = int(value)
        else:
            raise error_for(code, f"{what}: invalid value {value!r}: expected a positive whole "
                                  f"number, or 0, None or \"\" for \"the device decides\"")
    with _Context() as ctx:
        out = c_uint64()
        ctx.check(lib.batchfit_parse_requested_size(ctx.ptr, _text(value, what), what.encode(),
                                                    byref(out)))
        return out.value or None


_limit_lock = threading.Lock()
_cuda_limit: Optional[Tuple[str, int]] = None


def resolve_vram_limit(explicit: Union[str, float, None] = None, *,
                       flag_name: str = VRAM_LIMIT_GB_FLAG) -> Tuple[int, str]:
    """The VRAM limit in bytes (0: none) and where it came from, with the library's precedence:
    ``explicit`` (a flag's value), then ``limit_cuda_memory()``'s, then the environment variable
    ``VRAM_LIMIT_GB``, then ``BATCHFIT_VRAM_LIMIT_GB``. Values are GiB; bad ones raise
    ``ParseError`` with the library's message."""
    name = flag_name
    if explicit is None and _cuda_limit is not None:
        explicit, name = _cuda_limit[0], "limit_cuda_memory()"
    with _Context() as ctx:
        out = c_uint64()
        source = c_char_p()
        ctx.check(lib.batchfit_resolve_vram_limit(
            ctx.ptr, None if explicit is None else _text(explicit, name), name.encode(), byref(out),
            byref(source)))
        return out.value, (source.value or b"none").decode()


def add_vram_limit_argument(parser: Any, *, dest: str = "vram_limit_gb") -> Any:
    """Adds ``--vram-limit-gb X`` to an argparse parser, with the library's help text; a bad
    value is an argparse error with the library's message. The value is a float in GiB, None
    when the flag is absent (then the environment applies: see ``resolve_vram_limit``)."""
    import argparse

    def gib(text: str) -> float:
        try:
            resolve_vram_limit(text)
        except Exception as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return float(text)

    return parser.add_argument(VRAM_LIMIT_GB_FLAG, dest=dest, type=gib, default=None,
                               metavar="X", help=VRAM_LIMIT_GB_HELP)


def limit_cuda_memory(gb: Union[float, str, None]) -> int:
    """Caps the device memory this process may use at ``gb`` GiB (None: no cap), remembered for
    the probes (``measure_batch_size`` and the others read it back as their VRAM limit). Where
    PyTorch sees a GPU, its caching allocator is capped too
    (``torch.cuda.set_per_process_memory_fraction``). Returns the limit in bytes."""
    global _cuda_limit
    with _limit_lock:
        if gb is None:
            _cuda_limit = None
            limit = 0
        else:
            limit, _ = resolve_vram_limit(gb, flag_name="limit_cuda_memory()")
            # Kept as the text that was read (str() of b"0.5" was "b'0.5'": every later probe
            # failed to parse it, far from here).
            _cuda_limit = (_text(gb, "limit_cuda_memory()").decode("utf-8", "surrogateescape"),
                           limit)
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        index = torch.cuda.current_device()
        total = torch.cuda.get_device_properties(index).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, limit / total) if limit else 1.0,
                                                   index)
    return limit


def _no_unit(value: Any, what: str, n: int, fraction_too: bool = False) -> None:
    """As the CLI refuses ``--margin 5`` and ``--memory-budget 300`` (programs/units.c): 1 to
    1023 bytes written with no unit is no one's meaning, whatever carries it (an int, "5" from
    YAML or the environment, b"5", numpy's int64, a Decimal). Text ending in a unit passes."""
    if not 0 < n < 1024:
        return
    if isinstance(value, (str, bytes)):
        text = value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
        if any(c.isascii() and c.isalpha() for c in text):  # a unit: "5." and "5" name none
            return
    share = f"a fraction ({n / 100:g}), a percentage (\"{n}%\"), " if fraction_too and n < 100 \
        else ""
    raise error_for(1, f"{what}: {value!r} has no unit and would be {n} bytes; give {share}a "
                       f"unit (\"{n}MiB\", \"{n}GiB\"), or \"{n}B\" for bytes")


def _margin(ctx: _Context, margin: Union[float, str, int, None], opts: _lib.Options) -> None:
    if margin is None:
        return
    margin = _plain(margin)
    if isinstance(margin, float) and margin >= 1.0 and margin.is_integer():
        margin = int(margin)  # 1.5e9: a whole number of bytes, as parse_size reads it
    if isinstance(margin, float):
        if not 0.0 <= margin < 1.0:
            raise error_for(1, f"margin: a fraction must be in [0, 1) and a size a whole "
                               f"number of bytes, got {margin}")
        opts.margin_fraction, opts.margin_bytes = margin, 0
    elif isinstance(margin, str) and margin.strip().endswith("%"):
        frac = c_double()
        ctx.check(lib.batchfit_parse_percent(ctx.ptr, _text(margin, "margin"), b"margin", byref(frac)))
        if frac.value >= 1.0:
            raise error_for(1, "margin: a margin of 100% leaves nothing to probe")
        opts.margin_fraction, opts.margin_bytes = frac.value, 0
    else:
        opts.margin_bytes = parse_size(margin, "margin")
        _no_unit(margin, "margin", opts.margin_bytes, fraction_too=True)
        if opts.margin_bytes == 0:
            opts.margin_fraction = 0.0


def _count(value: Optional[int], what: str, allow_none: bool = True, least: int = 0) -> int:
    """A count for the library; None (where allowed) is 0, "not given". ``least`` is 1 where
    0 would be read as "not given" against what was meant (minimum=0 ran as 1, where the CLI
    refuses --min 0)."""
    if value is None and allow_none:
        return 0
    try:
        n = None if isinstance(value, (bool, float)) else operator.index(value)  # numpy ints too
    except TypeError:
        n = None
    if n is None or n < least:
        kind = "a positive whole number" if least else "a whole number, 0 or more"
        raise error_for(1, f"{what}: expected {kind}, got {value!r}")
    if n >= 2**63:
        raise error_for(1, f"{what}: {n} is too large (at most {2**63 - 1})")
    return n


def _numpy_bool(value: Any) -> bool:
    """Whether value is a numpy bool (numpy.bool_, a 0-d bool array), without importing numpy."""
    return getattr(getattr(value, "dtype", None), "kind", None) == "b"


def _plain(value: Any) -> Any:
    """numpy's numbers and Fractions as Python's, read as those are: a whole one (not a bool)
    as an int, any other real as a float (np.float32(0.05) was written out as
    "0.05000000074505806" and refused as bytes that are not whole). Anything else unchanged."""
    if isinstance(value, (bool, int, float)) or _numpy_bool(value):
        return value
    if isinstance(value, numbers.Integral):
        return operator.index(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def _flag(value: Any, what: str) -> int:
    """An on/off argument: True or False (a numpy bool too). "no" is truthy and int("0") is
    0: either would have set the opposite of what was meant, without a word."""
    if _numpy_bool(value):
        value = bool(value)
    if not isinstance(value, bool):
        raise error_for(1, f"{what}: expected True or False, got {value!r}")
    return int(value)


def _small(value: Any, what: str, least: int = 0) -> int:
    """A count the C side keeps in an unsigned int: refused past it, never wrapped."""
    n = _count(value, what, allow_none=False, least=least)
    if n > 2**32 - 1:
        raise error_for(1, f"{what}: {n} is too large (at most {2**32 - 1})")
    return n


class _Keep:
    """Bytes the C options point at, alive for the call."""

    def __init__(self) -> None:
        self.items: List[Any] = []

    def __call__(self, value: Any, what: str = "a string argument") -> Optional[bytes]:
        if value is None:
            return None
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if isinstance(value, bytes):
            b = value
        elif isinstance(value, str):
            b = value.encode()
        else:
            raise error_for(1, f"{what}: expected a string, got {type(value).__name__} {value!r}")
        _no_nul(b, what, value)
        self.items.append(b)
        return b


def _model_name(value: Any, what: str) -> None:
    """A model's name for the cache: an empty one names no model, and "" (as from
    os.environ.get("MODEL", "")), True or b"m" named every model alike."""
    if not isinstance(value, str) or not value:
        raise error_for(1, f"{what}: expected a non-empty string naming the model, got {value!r}")
    _no_nul(value, what)


def _options(ctx: _Context, keep: _Keep, *, max_batch_size: Optional[int], minimum: int,
             sample_count: Optional[int], margin: Any, memory_budget: Optional[Size],
             lattice: Union[str, int], strategy: str, max_trials: Optional[int],
             vram_limit_gb: Union[float, str, None], peak_spread: Union[float, str, None],
             estimate: Optional[int], cache_key: Optional[str], cache: bool,
             cache_dir: Optional[str], no_device: str) -> _lib.Options:
    opts = _lib.Options()
    lib.batchfit_options_init(byref(opts))
    opts.requested_max = _requested_max(max_batch_size, "max_batch_size", 1) or 0
    opts.min_batch = _count(minimum, "minimum", least=1)
    opts.samples = _count(sample_count, "sample_count")
    is_bool = isinstance(lattice, bool) or _numpy_bool(lattice)
    if not is_bool and not isinstance(lattice, (str, float)) and hasattr(lattice, "__index__"):
        try:
            lattice = operator.index(lattice)  # numpy integers too
        except TypeError:
            pass  # refused below, by name
    if isinstance(lattice, int) and not isinstance(lattice, bool):
        if lattice < 1:
            raise error_for(1, f"lattice: a multiple must be positive, got {lattice}")
        lattice = _count(lattice, "lattice")
        opts.lattice, opts.lattice_multiple = (0, 0) if lattice == 1 else (1, lattice)
    elif lattice in ("every", "every_integer"):
        opts.lattice = 0
    elif lattice in ("power_of_two", "pow2"):
        opts.lattice = 2
    else:
        raise error_for(1, f"lattice: expected \"every\", \"power_of_two\" or a multiple, got "
                           f"{lattice!r}")
    _margin(ctx, margin, opts)
    if memory_budget is not None:
        opts.memory_budget_bytes = parse_size(memory_budget, "memory_budget")
        if opts.memory_budget_bytes == 0:
            raise error_for(1, "memory_budget: it must be larger than zero")
        _no_unit(memory_budget, "memory_budget", opts.memory_budget_bytes)
    value = c_int()
    ctx.check(lib.batchfit_parse_strategy(ctx.ptr, _text(strategy, "strategy"), b"strategy", byref(value)))
    opts.strategy = value.value
    if max_trials is not None:
        # At least 1: -1 was refused as "0 or more", and 0 then as "at least 1".
        opts.max_trials = _small(max_trials, "max_trials", least=1)
    limit, source = resolve_vram_limit(vram_limit_gb, flag_name="vram_limit_gb")
    opts.vram_limit_bytes = limit
    opts.vram_limit_source = keep(source)
    if peak_spread is not None:
        spread = peak_spread
        if isinstance(spread, str) and spread.strip().endswith("%"):
            frac = c_double()
            ctx.check(lib.batchfit_parse_percent(ctx.ptr, _text(spread, "peak_spread"), b"peak_spread",
                                                 byref(frac)))
            spread = frac.value
        spread = _plain(spread)
        if isinstance(spread, bool) or not isinstance(spread, (int, float)):
            raise error_for(1, f"peak_spread: expected a fraction (0.05) or a percentage "
                               f"(\"5%\"), got {peak_spread!r}")
        if not 0.0 <= spread < 0.5:
            raise error_for(1, f"peak_spread: expected a fraction in [0, 0.5), got {peak_spread}")
        opts.peak_spread = float(spread)
    opts.first_guess = _count(estimate, "estimate")
    # "no" and 0.0 are no one's True (the string "no" turned the cache on).
    opts.cache = _flag(cache, "cache")
    if cache_key is not None:
        _model_name(cache_key, "cache_key")  # as --cache-key '' is refused
    opts.cache_key = keep(cache_key)
    # An empty path names no directory: it read no entry and wrote none, without a word.
    if isinstance(cache_dir, (str, bytes, os.PathLike)) and not os.fspath(cache_dir):
        raise error_for(1, "cache_dir: an empty path names no directory; leave it out for the "
                           "default ($BATCHFIT_CACHE_DIR, else $XDG_CACHE_HOME/batchfit, else "
                           "~/.cache/batchfit)")
    opts.cache_dir = keep(cache_dir, "cache_dir")
    if no_device not in ("fallback", "error"):
        raise error_for(1, f"no_device: expected \"fallback\" or \"error\", got {no_device!r}")
    opts.no_device = 0 if no_device == "fallback" else 1
    return opts


def _write_message(buf_address: int, size: int, text: str) -> None:
    data = text.encode("utf-8", "replace")
    if len(data) > size - 1:
        # Cut as the library cuts its own: at a character, ending in "...".
        data = data[:max(size - 4, 0)].decode("utf-8", "ignore").encode() + b"..."
        data = data[:max(size - 1, 0)]
    ctypes.memmove(buf_address, data + b"\0", len(data) + 1)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _needed_bytes(exc: BaseException, in_use: int) -> Optional[int]:
    """What an out-of-memory trial needed at least: what was in use plus the allocation that
    failed, when the message says how large it was."""
    m = _TRIED.search(str(exc))
    if not m:
        return None
    return in_use + int(float(m.group(1)) * _UNITS[m.group(2)])


def _guarded(default: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A callback the library calls: no exception may unwind through its C frames. Anything
    that escapes the callback's own handling is kept (re-raised after the library returns)
    and the callback answers ``default``."""
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(self: "_StepCall", *args: Any) -> Any:
            try:
                return fn(self, *args)
            except BaseException as exc:
                self._keep(exc)
                return default
        guarded.__name__ = fn.__name__
        guarded.__doc__ = fn.__doc__
        return guarded
    return wrap


class TrialOverBudget(BaseException):
    """Raised inside an in-process trial on the host whose resident memory ran far past the
    budget: a quarter over it, or close to what the system has left. Python cannot stop the
    kernel's out-of-memory killer, which ends the whole process, the caller's too: a trial at a
    size far too large (an estimate of 100000 grew to 24 GiB) is stopped first, as the CLI's
    watchdog stops a command's trial, and read as out of memory. Like KeyboardInterrupt it is
    a BaseException: a step's ``except MemoryError`` or ``except Exception`` (skipping a sample
    that does not fit) does not swallow it; one that swallows even that gets it again every
    50 ms while over the limit. The guard acts between Python bytecodes: one operation that
    allocates more than what is left is beyond it."""


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _bytes_text(n: int) -> str:
    """n bytes as the library writes sizes ("1.50 GiB")."""
    buf = ctypes.create_string_buffer(32)
    lib.batchfit_format_bytes(float(n), buf, len(buf))
    return buf.value.decode()


def _self_rss() -> Optional[int]:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def _mem_available() -> Optional[int]:
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class _HostGuard:
    """Watches this process's resident memory while one host trial runs, from a thread, and
    raises TrialOverBudget in the trial's thread once it passes the limit, and again every
    REPEAT seconds while it stays past it (a step that catches MemoryError to skip a sample
    swallowed the first and grew on to 1.5 GiB). Only the trial's own thread is interrupted:
    memory a thread of the step's own takes is seen, but that thread runs on."""

    INTERVAL = 0.005
    REPEAT = 0.05

    def __init__(self, budget: int, thread_id: int) -> None:
        rss, available = _self_rss(), _mem_available()
        limit = budget + budget // 4
        if rss is not None and available is not None:
            limit = min(limit, rss + available - (128 << 20))
        self.limit = max(limit, budget)
        self.thread_id = thread_id
        self.lock = threading.Lock()
        self.active, self.fired, self.seen = True, False, 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="batchfit-host-guard", daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        last = 0.0
        while not self.done.wait(self.INTERVAL):
            rss = _self_rss()
            if rss is None or rss <= self.limit or time.monotonic() - last < self.REPEAT:
                continue
            with self.lock:
                if not self.active:
                    return
                self.fired, self.seen = True, max(self.seen, rss)
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(self.thread_id), ctypes.py_object(TrialOverBudget))
            last = time.monotonic()

    def stop(self) -> None:
        with self.lock:
            self.active = False
            if self.fired:  # not delivered yet (the trial ended first): withdrawn
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread_id), None)
        self.done.set()
        self.thread.join()


class _StepCall:
    """One in-process probe's step: built, run and released when the library says so. The
    step and everything it holds are dropped as soon as the library releases it."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.factory = factory
        self.owner: Any = None       # what the factory returned
        self.step: Any = None        # what runs (the owner, or what __enter__ returned)
        self.release_with: Optional[str] = None
        self.exception: Optional[BaseException] = None
        self.released_badly = False  # the first exception kept came from release()
        self.cuda_index: Optional[int] = None
        self.torch: Any = None
        self.in_user_code = False    # the user's own code is running (see _SigintDuringProbe)
        self.host = False            # trials on the host: guarded (TrialOverBudget)
        self.guard: Optional[_HostGuard] = None

    def _user(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Calls the user's code: a Ctrl-C meanwhile is raised in it, as Python would."""
        try:
            self.in_user_code = True
            return fn(*args)
        finally:
            self.in_user_code = False

    def _end_guard(self) -> Optional[TrialOverBudget]:
        """Stops the trial's guard (again: stopping is idempotent), which stays in self.guard
        with what it saw until the next trial; returns the TrialOverBudget it raised meanwhile,
        where that arrived while stopping it."""
        late = None
        while self.guard is not None:
            try:
                self.guard.stop()
                break
            except TrialOverBudget as exc:
                late = exc
        return late

    def use_device(self, spec: str) -> None:
        self.host = spec == "host"
        torch = sys.modules.get("torch")
        if spec.startswith("cuda:") and torch is not None and torch.cuda.is_available():
            self.torch, self.cuda_index = torch, int(spec[5:])

    def _keep(self, exc: BaseException) -> None:
        self.in_user_code = False  # a Ctrl-C raised on _user's way out left it set
        if self.exception is None:
            self.exception = exc
        if isinstance(exc, KeyboardInterrupt):
            lib.batchfit_interrupt(int(signal.SIGINT))

    @_guarded(_lib.ERROR)
    def build(self, userdata: Any, device: Any, state: Any, msg: Any, msg_len: int) -> int:
        try:
            state[0] = None
            owner = self._user(self.factory)
            if hasattr(owner, "release"):
                self.owner, self.step, self.release_with = owner, owner, "release"
            elif hasattr(owner, "__enter__") and hasattr(owner, "__exit__"):
                step = self._user(owner.__enter__)
                self.owner, self.step, self.release_with = owner, step, "__exit__"
            else:
                self.owner, self.step, self.release_with = owner, owner, None
            step = self.step
            if not callable(getattr(step, "run", None)):
                if step is not owner:
                    wrong = TypeError(f"the step factory returned {type(owner).__name__}, whose "
                                      f"__enter__ returned {type(step).__name__} {step!r}, "
                                      f"which has no run(batch) method (does __enter__ return "
                                      f"self?)")
                else:
                    wrong = TypeError(f"the step factory returned {type(owner).__name__}, "
                                      f"which has no run(batch) method")
                self._keep(wrong)  # __exit__ is told why the with-block ends
                self.release(None)
                raise wrong
            return _lib.FITS
        except BaseException as exc:
            if not isinstance(exc, KeyboardInterrupt) and is_out_of_memory(exc):
                if msg:
                    _write_message(msg, msg_len, _describe(exc))
                return _lib.OOM
            self._keep(exc)
            if msg:
                _write_message(msg, msg_len, _describe(exc))
            return _lib.ERROR

    @_guarded(_lib.ERROR)
    def run(self, state: Any, batch: int, report: Any) -> int:
        rep = report.contents
        self.guard = None
        try:
            if self.exception is not None:
                raise RuntimeError("a previous on_out_of_memory() failed")
            torch, index = self.torch, self.cuda_index
            if torch is not None:
                torch.cuda.reset_peak_memory_stats(index)
            if self.host and rep.budget_bytes:
                self.guard = _HostGuard(int(rep.budget_bytes), threading.get_ident())
            peak = self._user(self.step.run, int(batch))
            late = self._end_guard()
            if late is not None:
                raise late
            if torch is not None:
                torch.cuda.synchronize(index)
            if isinstance(peak, PeakBytes):
                # The step's own measurement wins over torch's, as the library's step report
                # wins over the device's (and as the README says of PeakBytes): on CUDA it was
                # always replaced by max_memory_reserved(), which misses what the step's own
                # allocator or another library took. One past 2^64 - 1 (made without
                # PeakBytes' check) is an error, never dropped for another measurement.
                _check_peak(int(peak))
                rep.peak_known, rep.peak_bytes = 1, int(peak)
            elif torch is not None:
                rep.peak_known, rep.peak_bytes = 1, int(torch.cuda.max_memory_reserved(index))
            # What the trial left in reference cycles goes before the next trial's peak is
            # reset (the library gives the freed heap back to the system then).
            gc.collect()
            return _lib.FITS
        except BaseException as exc:
            late = self._end_guard()
            guard = self.guard  # stopped, with what it saw
            if ((isinstance(late, TrialOverBudget) or isinstance(exc, TrialOverBudget))
                    and not isinstance(exc, KeyboardInterrupt)):
                # Past the limit the trial did not fit, whatever else it raised meanwhile (a
                # thread of its own hitting a limit of its own): that is said, not lost.
                seen = guard.seen if guard is not None else 0
                if seen:
                    rep.peak_known, rep.peak_bytes = 1, seen
                also = "" if isinstance(exc, TrialOverBudget) else f"; it raised {_describe(exc)}"
                budget = int(rep.budget_bytes)
                limit = guard.limit if guard is not None else budget + budget // 4
                if limit >= budget + budget // 4:
                    why = f"the budget of {_bytes_text(budget)} and a quarter"
                elif limit <= budget:
                    why = (f"the budget of {_bytes_text(budget)}, more than the system had "
                           f"left")
                else:
                    why = ("128 MiB short of what the system had left, where the kernel's "
                           "out-of-memory killer would end this process")
                _write_message(ctypes.addressof(rep) + _lib.StepReport.message.offset,
                               _lib.MESSAGE_MAX,
                               f"TrialOverBudget: stopped at {_bytes_text(seen)} resident, past "
                               f"{_bytes_text(limit)} ({why}){also}")
                return _lib.OOM
            if not isinstance(exc, KeyboardInterrupt) and is_out_of_memory(exc):
                # What was in use is known on a CUDA device only: on the host the failed
                # allocation alone (20 MiB of a 227 MiB process) read as all the trial needed,
                # and warned that something other than the budget stopped it.
                if self.torch is not None:
                    in_use = int(self.torch.cuda.memory_reserved(self.cuda_index))
                    needed = _needed_bytes(exc, in_use)
                    if needed is not None:
                        rep.peak_known, rep.peak_bytes = 1, needed
                _write_message(ctypes.addressof(rep) + _lib.StepReport.message.offset, _lib.MESSAGE_MAX, _describe(exc))
                return _lib.OOM
            self._keep(exc)
            _write_message(ctypes.addressof(rep) + _lib.StepReport.message.offset, _lib.MESSAGE_MAX, _describe(exc))
            return _lib.ERROR

    @_guarded(None)
    def on_oom(self, state: Any, batch: int) -> None:
        try:
            hook = getattr(self.step, "on_out_of_memory", None)
            if hook is not None:
                self._user(hook)
            gc.collect()
            if self.torch is not None:
                self.torch.cuda.empty_cache()
        except BaseException as exc:
            self._keep(exc)

    @_guarded(None)
    def release(self, state: Any) -> None:
        owner, how = self.owner, self.release_with
        self.owner = self.step = self.release_with = None
        try:
            if how == "release":
                self._user(owner.release)
            elif how == "__exit__":
                # The exception that stopped the search, as a with-block's __exit__ sees it
                # (its return value is not asked: the exception is raised to the caller).
                exc = self.exception
                if exc is None:
                    self._user(owner.__exit__, None, None, None)
                else:
                    self._user(owner.__exit__, type(exc), exc, exc.__traceback__)
        except BaseException as exc:
            if self.exception is None:
                self.released_badly = True
            self._keep(exc)
        finally:
            del owner

    def free(self) -> None:
        """The last step of the order: free what the released step left in caches."""
        self.factory = None  # type: ignore[assignment]
        gc.collect()
        _trim_heap()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()


def _libc_malloc_trim() -> Any:
    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)  # glibc only
    except OSError:
        return None


_MALLOC_TRIM = _libc_malloc_trim()


def _trim_heap() -> None:
    """Gives the heap the released step freed back to the system: glibc keeps it resident,
    and training started after the probe counted it against the budget the answer was
    measured under."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


class _SigintDuringProbe:
    """While an in-process probe runs (main thread, Python's own Ctrl-C handler in place): a
    Ctrl-C inside the user's code (the factory, the step, release) raises KeyboardInterrupt
    there, as Python would, and the callback that called it keeps it; anywhere else (the
    library's C frames, a callback's own first lines) it only asks the library to stop, and is
    raised once the library returns. Raised there by Python's handler, it escaped the callback
    (ctypes reports and drops such an exception): lost, or left the library's request behind to
    stop the next, unrelated probe."""

    def __init__(self, call: "_StepCall") -> None:
        self.call = call
        self.previous: Any = None
        self.installed = False
        self.pending = False
        self.left = 0           # a request no trial consumed, taken back under the lock
        self.log_pending = False

    def _handler(self, signum: int, frame: Any) -> None:
        if self.call.in_user_code:
            raise KeyboardInterrupt
        self.pending = True
        if _probe_owner == threading.get_ident():  # this call's probe, never another thread's
            lib.batchfit_interrupt(int(signal.SIGINT))

    def take_back(self) -> None:
        """Withdraws what asked the library to stop and no trial consumed (a Ctrl-C after the
        last trial, a KeyboardInterrupt in release() or a log handler): this call raises it,
        the next probe must not stop on it."""
        self.left = lib.batchfit_interrupt_take()
        self.log_pending = _take_log_interrupt()

    @property
    def interrupted(self) -> bool:
        return bool(self.pending or self.left or self.log_pending)

    def __enter__(self) -> "_SigintDuringProbe":
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)
            if previous is signal.default_int_handler:  # a handler of the user's own stays
                signal.signal(signal.SIGINT, self._handler)
                self.previous, self.installed = previous, True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.installed:
            # Only ours: a handler the user's code installed meanwhile stays.
            if signal.getsignal(signal.SIGINT) == self._handler:
                signal.signal(signal.SIGINT, self.previous)
            self.installed = False
        if self.interrupted and exc[0] is not None and not issubclass(exc[0], KeyboardInterrupt):
            # An error on the way (an option, the device) would hide the Ctrl-C: it wins.
            raise KeyboardInterrupt


class _CatchEscapes:
    """While a probe runs: an exception that escapes one of its callbacks anyway (a signal
    handler of the user's raising KeyboardInterrupt on the callback's first line, before
    ``_guarded``'s try; one in about 300 Ctrl-Cs) reaches ``sys.unraisablehook``, where ctypes
    reports it and drops it, and the callback answers 0, which reads as a fit. Here it is kept
    as the callback's own would be, and the library is asked to stop, so that the trial is not
    recorded and the probe raises it."""

    def __init__(self, call: "_StepCall") -> None:
        self.call = call
        self.previous: Any = None

    def _hook(self, unraisable: Any) -> None:
        exc = getattr(unraisable, "exc_value", None)
        if isinstance(exc, BaseException) and getattr(unraisable.object, "__self__", None) is self.call:
            self.call._keep(exc)
            lib.batchfit_interrupt(int(signal.SIGINT))
            return
        self.previous(unraisable)

    def __enter__(self) -> "_CatchEscapes":
        self.previous = sys.unraisablehook
        sys.unraisablehook = self._hook
        return self

    def __exit__(self, *exc: Any) -> None:
        if sys.unraisablehook == self._hook:  # one the user's code set meanwhile stays
            sys.unraisablehook = self.previous


def _result_of(ctx: _Context, out: c_void_p) -> Optional[Result]:
    if not out:
        return None
    try:
        text = c_char_p()
        ctx.check(lib.batchfit_result_json(ctx.ptr, out, byref(text)))
        return Result((text.value or b"{}").decode("utf-8", "replace"))
    finally:
        lib.batchfit_result_free(out)


def _raise_step_exception(exc: BaseException, result: Optional[Result]) -> None:
    """Re-raises the step's own exception with its traceback. The frames' locals are cleared
    first: they held the step (and, after a failed trial, its tensors), which must not outlive
    the probe."""
    tb = exc.__traceback__
    traceback.clear_frames(tb)
    # The exceptions it was raised from or during held the step in their frames too.
    seen = {id(exc)}
    chained = exc.__cause__ or exc.__context__
    while chained is not None and id(chained) not in seen:
        seen.add(id(chained))
        traceback.clear_frames(chained.__traceback__)
        chained = chained.__cause__ or chained.__context__
    if result is not None and not isinstance(exc, KeyboardInterrupt):
        try:
            exc.batchfit_result = result  # type: ignore[attr-defined]
        except AttributeError:
            pass
    raise exc.with_traceback(tb)


def _open_device(ctx: _Context, spec: str) -> c_void_p:
    dev = c_void_p()
    rc = lib.batchfit_device_open(ctx.ptr, _text(spec, "device"), byref(dev))
    if rc != 0:
        raise error_for(rc, f"device: {ctx.error()}")
    return dev


def measure_batch_size(step_factory: Callable[[], Any], *, max_batch_size: Optional[int] = None,
                       minimum: int = 1, sample_count: Optional[int] = None,
                       margin: Union[float, str, int, None] = None, device: str = "auto",
                       memory_budget: Optional[Size] = None, lattice: Union[str, int] = "every",
                       strategy: str = "model", max_trials: Optional[int] = None,
                       vram_limit_gb: Union[float, str, None] = None,
                       peak_spread: Union[float, str, None] = None, estimate: Optional[int] = None,
                       cache_key: Optional[str] = None, cache: bool = False,
                       cache_dir: Optional[str] = None, no_device: Optional[str] = None,
                       name: Optional[str] = None) -> Result:
    """Finds the largest batch size whose step fits, by running it in this process.

    ``step_factory()`` makes a throwaway step: an object with ``run(batch)`` (one training step
    at that batch size; it may return ``PeakBytes(n)``, the peak it measured itself), optionally
    ``on_out_of_memory()`` (drop what a failed trial left), released by the library on every
    path through ``release()`` or the context-manager protocol. The library owns the order:
    check the device, hold the margin, build, search, release, free. Out of memory
    (``MemoryError``, torch's ``OutOfMemoryError``, CPU allocator failures) is a trial that did
    not fit; any other exception stops the search and is re-raised with its traceback, and so is
    ``KeyboardInterrupt``. Nothing references the step after the call.

    ``device`` is a spec as the CLI's ``--device`` (``"auto"``, ``"host"``, ``"cuda:0"``,
    ``"sim:..."``), ``memory_budget`` a size as ``--memory-budget`` (``"700MiB"``), ``margin`` a
    fraction (0.05), a percentage (``"5%"``) or a size, ``lattice`` ``"every"``,
    ``"power_of_two"`` or a multiple. ``no_device``: ``"fallback"`` (a default size, with a
    warning, where no device is usable) or ``"error"`` (``NoDevice``); by default the fallback
    for ``device="auto"`` and the error for a device named explicitly. Library errors raise
    ``batchfit.BatchfitError`` subclasses (``MinimumDoesNotFit``, ``InvalidArgument``, ...)
    carrying the result. ``cache=True`` remembers the answer (in ``cache_dir``, else the CLI's
    directory) under ``cache_key``, or ``name``, with the device and every setting: a step in
    this process has no command line to tell its model apart, so without either the cache stays
    off, with a warning."""
    if not callable(step_factory):
        raise error_for(1, "step_factory: expected a callable that returns a step")
    call = _StepCall(step_factory)
    keep = _Keep()
    if no_device is None:
        no_device = "fallback" if device == "auto" else "error"
    # The name is what the cache knows an in-process model by (with no cache_key): only a name
    # the caller gave. A factory's __qualname__ ("<lambda>", "Step") is the same for different
    # models, and one model's remembered answer became another's hint.
    label = name
    if name is not None:
        _model_name(name, "name")
    # Outermost: a Ctrl-C outside the user's code waits until the probe lock is released and
    # the library's objects are freed (one landing in the lock's release left it held, and every
    # later probe hung).
    sigint = _SigintDuringProbe(call)
    with sigint, _OneProbe(sigint), _CatchEscapes(call), _Context() as ctx:
        try:
            opts = _options(ctx, keep, max_batch_size=max_batch_size, minimum=minimum,
                            sample_count=sample_count, margin=margin,
                            memory_budget=memory_budget, lattice=lattice, strategy=strategy,
                            max_trials=max_trials, vram_limit_gb=vram_limit_gb,
                            peak_spread=peak_spread, estimate=estimate, cache_key=cache_key,
                            cache=cache, cache_dir=cache_dir, no_device=no_device)
            step = _lib.Step()
            step.struct_size = ctypes.sizeof(step)
            step.name = keep(None if label is None else str(label), "name")
            step.min_batch = 0
            # The callbacks live exactly as long as this frame's call into the library.
            step.build = _lib.BUILD_FN(call.build)
            step.run = _lib.RUN_FN(call.run)
            step.on_oom = _lib.ON_OOM_FN(call.on_oom)
            step.release = _lib.RELEASE_FN(call.release)
            dev = _open_device(ctx, device)
            out = c_void_p()
            try:
                call.use_device((lib.batchfit_device_spec(dev) or b"").decode())
                rc = lib.batchfit_probe(ctx.ptr, byref(opts), dev, byref(step), None,
                                        byref(out))
                message = ctx.error()
                result = _result_of(ctx, out)
            finally:
                lib.batchfit_device_free(dev)
                call.release(None)  # only does anything if the library never got to build
                call.free()
        finally:
            sigint.take_back()  # on every path, while this call still holds the lock
    exc, call.exception = call.exception, None
    released_badly = call.released_badly
    del call, step
    if sigint.interrupted and exc is None:
        exc = KeyboardInterrupt()
    if exc is not None and rc != 0 and released_badly and exc.__context__ is None:
        # release() raised on the way out of a probe the library had already ended with an
        # error of its own (the minimum does not fit): that error is the context, as in an
        # except block, so `except batchfit.MinimumDoesNotFit` is not the only way to see it.
        exc.__context__ = error_for(rc, message, result)
    if exc is not None:
        _raise_step_exception(exc, result)
    if rc != 0:
        raise error_for(rc, message, result)
    assert result is not None
    return result


class _CallableStep:
    """A plain callable as a step: ``run(batch)`` calls it."""

    def __init__(self, run_batch: Callable[[int], Any]) -> None:
        self._run_batch = run_batch

    def run(self, batch: int) -> Any:
        return self._run_batch(batch)

    def release(self) -> None:
        self._run_batch = None  # type: ignore[assignment]


def probe_batch_size(run_batch: Callable[[int], Any], **kwargs: Any) -> Result:
    """``measure_batch_size`` for a plain callable, e.g. an inference pass: ``run_batch(batch)``
    runs one batch (and may return ``PeakBytes(n)``, the peak it measured). Keyword arguments are
    ``measure_batch_size``'s."""
    if not callable(run_batch):
        raise error_for(1, "run_batch: expected a callable taking the batch size")
    return measure_batch_size(lambda: _CallableStep(run_batch), **kwargs)


def _argv_array(items: Sequence[bytes], keep: _Keep) -> Any:
    arr = (c_char_p * (len(items) + 1))()
    for i, item in enumerate(items):
        keep.items.append(item)
        arr[i] = item
    arr[len(items)] = None
    keep.items.append(arr)
    return arr


def _command_args(argv: Any) -> List[bytes]:
    """The command's arguments as the C strings execve gets: str, bytes or os.PathLike (as
    subprocess takes them, encoded with os.fsencode); anything else is a TypeError (None ran
    a command named "None"), a NUL byte is refused (it cut "a\\0b" to "a")."""
    if isinstance(argv, (str, bytes, os.PathLike)) or not argv:
        raise error_for(1, f"argv: expected a non-empty list of arguments, got {argv!r}")
    args = []
    for i, item in enumerate(argv):
        if not isinstance(item, (str, bytes, os.PathLike)):
            raise TypeError(f"argv[{i}]: expected str, bytes or os.PathLike, got {item!r} "
                            f"({type(item).__name__})")
        arg = os.fsencode(item)
        _no_nul(arg, f"argv[{i}]", item)
        args.append(arg)
    if not args:
        raise error_for(1, f"argv: expected a non-empty list of arguments, got {argv!r}")
    return args


def _oom_patterns(patterns: Union[str, bytes, Sequence[Union[str, bytes]], None]) -> List[bytes]:
    """The extra out-of-memory patterns (regular expressions). One str is one pattern (it was
    read one character a pattern, and " " made every trial out of memory); an empty one is
    refused, as --oom-pattern '' is: it matches every line."""
    if patterns is None:
        return []
    if isinstance(patterns, (str, bytes)):
        patterns = [patterns]
    try:
        items = list(patterns)
    except TypeError:
        raise TypeError(f"oom_patterns: expected a regular expression or a list of them, got "
                        f"{patterns!r}") from None
    out = []
    for i, pattern in enumerate(items):
        what = "oom_patterns" if len(items) == 1 else f"oom_patterns[{i}]"
        if not isinstance(pattern, (str, bytes)):
            raise TypeError(f"{what}: expected a regular expression (str), got {pattern!r} "
                            f"({type(pattern).__name__})")
        if not pattern:
            raise error_for(1, f"{what}: the pattern {pattern!r} is empty: it matches every "
                               "line, and every trial would be out of memory")
        _no_nul(pattern, what)
        out.append(pattern.encode() if isinstance(pattern, str) else bytes(pattern))
    return out


def _seconds(value: Any, what: str, most: float, none: str) -> float:
    """A positive, finite number of seconds, at most ``most`` (what the CLI's --timeout and
    --sample-interval take); ``none`` says what None means."""
    try:
        seconds = None if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        seconds = None
    if seconds is None or not math.isfinite(seconds) or not 0.0 < seconds <= most:
        raise error_for(1, f"{what}: invalid value {value!r}: expected a positive number of "
                           f"seconds, at most {most:g} (None: {none})")
    return seconds


class _SigintToLibrary:
    """While a command probe runs, Ctrl-C goes straight to batchfit_interrupt() (Python's own
    handler would only run after the library returns)."""

    def __init__(self) -> None:
        self.libc: Any = None
        self.previous: Any = None

    def __enter__(self) -> "_SigintToLibrary":
        if threading.current_thread() is threading.main_thread():
            self.libc = ctypes.CDLL(None)
            self.libc.signal.restype = c_void_p
            self.libc.signal.argtypes = [c_int, c_void_p]
            handler = ctypes.cast(lib.batchfit_interrupt, c_void_p)
            self.previous = self.libc.signal(int(signal.SIGINT), handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.libc is not None:
            self.libc.signal(int(signal.SIGINT), self.previous)


def probe_command(argv: Sequence[str], *, timeout: Optional[float] = None,
                  enforce: bool = False, enforce_address_space: bool = False,
                  crash_is_oom: bool = False, watchdog: bool = True,
                  oom_patterns: Union[str, Sequence[str], None] = (),
                  show_output: bool = False,
                  cgroups: bool = True, sample_interval: Optional[float] = None,
                  max_batch_size: Optional[int] = None, minimum: int = 1,
                  sample_count: Optional[int] = None, margin: Union[float, str, int, None] = None,
                  device: str = "auto", memory_budget: Optional[Size] = None,
                  lattice: Union[str, int] = "every", strategy: str = "model",
                  max_trials: Optional[int] = None, vram_limit_gb: Union[float, str, None] = None,
                  peak_spread: Union[float, str, None] = None, estimate: Optional[int] = None,
                  cache_key: Optional[str] = None, cache: bool = False,
                  cache_dir: Optional[str] = None, no_device: str = "error") -> Result:
    """The library's command probe (``batchfit probe -- COMMAND``): runs ``argv`` once per
    trial in its own process, with ``{batch}`` in any argument replaced by the batch size and
    ``BATCHFIT_BATCH_SIZE`` in its environment. Ctrl-C stops it (KeyboardInterrupt, after every
    trial process is gone). ``argv``'s items are str, bytes or os.PathLike, as subprocess takes
    them. ``timeout`` (seconds per trial, None: none) and ``sample_interval`` (seconds between
    memory samples, None: 0.02) are positive numbers, at most 1e9 and 1e6. ``oom_patterns`` is
    a regular expression or a list of them (never empty), each one more out-of-memory signature
    as ``--oom-pattern``. ``enforce`` and ``enforce_address_space`` are ``--enforce`` and
    ``--enforce-address-space``; ``crash_is_oom`` (``--crash-is-oom``) needs one of them. Other
    keywords are ``measure_batch_size``'s."""
    args = _command_args(argv)
    patterns = _oom_patterns(oom_patterns)
    flags = {flag: _flag(value, flag) for flag, value in (
        ("enforce", enforce), ("enforce_address_space", enforce_address_space),
        ("crash_is_oom", crash_is_oom), ("watchdog", watchdog), ("show_output", show_output),
        ("cgroups", cgroups))}
    # Checked here, each named by its own Python argument (the library's refusal names its C
    # field, timeout_seconds).
    if flags["crash_is_oom"] and not (flags["enforce"] or flags["enforce_address_space"]):
        raise error_for(1, "crash_is_oom: it counts a crash near the cap enforce or "
                           "enforce_address_space sets as out of memory; neither is set")
    # 0 is "no timeout" as the C field's 0 is (the CLI's --timeout takes no 0).
    zero = isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout == 0
    seconds = None if timeout is None or zero else _seconds(timeout, "timeout", 1e9,
                                                             "no timeout")
    interval = None if sample_interval is None else _seconds(sample_interval,
                                                             "sample_interval", 1e6, "0.02")
    keep = _Keep()
    with _Context() as ctx:
        opts = _options(ctx, keep, max_batch_size=max_batch_size, minimum=minimum,
                        sample_count=sample_count, margin=margin, memory_budget=memory_budget,
                        lattice=lattice, strategy=strategy, max_trials=max_trials,
                        vram_limit_gb=vram_limit_gb, peak_spread=peak_spread, estimate=estimate,
                        cache_key=cache_key, cache=cache, cache_dir=cache_dir,
                        no_device=no_device)
        copts = _lib.CommandOptions()
        lib.batchfit_command_options_init(byref(copts))
        copts.argv = _argv_array(args, keep)
        if seconds is not None:
            copts.timeout_seconds = seconds
        copts.watchdog, copts.enforce = flags["watchdog"], flags["enforce"]
        copts.enforce_address_space = flags["enforce_address_space"]
        copts.crash_is_oom, copts.show_output = flags["crash_is_oom"], flags["show_output"]
        copts.cgroups = 0 if flags["cgroups"] else 1
        if interval is not None:
            copts.sample_interval = interval
        if patterns:
            copts.oom_patterns = _argv_array(patterns, keep)
        if opts.vram_limit_bytes and vram_limit_gb is not None:
            # The text the limit was read from, as the child reads it back (str() of b"8" or
            # Fraction(1, 2) made "b'8'" and "1/2", which no child could parse).
            copts.vram_limit_text = keep(_text(vram_limit_gb, "vram_limit_gb").decode(
                "utf-8", "surrogateescape"))
        dev = _open_device(ctx, device)
        out = c_void_p()
        try:
            with _SigintToLibrary():
                rc = lib.batchfit_probe_command(ctx.ptr, byref(opts), dev, byref(copts),
                                                byref(out))
            message = ctx.error()
            result = _result_of(ctx, out)
        finally:
            lib.batchfit_device_free(dev)
    # A Ctrl-C after the last trial reached the library but stopped nothing: it is raised here,
    # not left to stop the next probe.
    left = lib.batchfit_interrupt_take()
    if (result is not None and result.interrupted) or left:
        raise KeyboardInterrupt(message)
    if rc != 0:
        raise error_for(rc, message, result)
    assert result is not None
    return result


def result_svg(json_text: str) -> str:
    """The SVG the library draws for a result's JSON."""
    with _Context() as ctx:
        res = c_void_p()
        data = json_text.encode()
        ctx.check(lib.batchfit_result_from_json(ctx.ptr, data, len(data), byref(res)))
        try:
            svg = c_char_p()
            ctx.check(lib.batchfit_result_svg(ctx.ptr, res, byref(svg)))
            return (svg.value or b"").decode("utf-8", "replace")
        finally:
            lib.batchfit_result_free(res)


def version() -> str:
    """The loaded library's version, e.g. ``"0.1.0"``."""
    return lib.batchfit_version_string().decode()


