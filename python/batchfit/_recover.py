"""Recovery from out-of-memory during training, over batchfit_recover_*: a smaller micro-batch
with gradient accumulation keeps the effective batch, and grows back after clean steps."""
from __future__ import annotations

from ctypes import byref, c_int, c_void_p
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from . import _lib
from ._core import _Context, _count, _small, _take_log_interrupt, is_out_of_memory, parse_size
from ._errors import error_for
from ._lib import lib
from ._result import Fit, Result


@dataclass(frozen=True)
class Plan:
    """One optimizer step: ``accumulation`` micro-batches of ``micro_batch`` samples, the last
    of ``last_micro_batch``, always ``effective_batch`` samples in all."""
    micro_batch: int
    accumulation: int
    last_micro_batch: int
    effective_batch: int

    def micro_batches(self) -> list:
        """The sizes of the micro-batches, in order."""
        return [self.micro_batch] * (self.accumulation - 1) + [self.last_micro_batch]


class Recovery:
    """Keeps a training loop running when a step runs out of memory.

    >>> rec = Recovery(global_batch=256, micro_batch=result.batch_size, fit=result)
    >>> for batch in data:
    ...     while True:   # the same batch again, under the new plan, until it fits
    ...         try:
    ...             train_step(batch, rec.plan)
    ...         except Exception as exc:
    ...             if not is_out_of_memory(exc):
    ...                 raise
    ...             rec.out_of_memory()   # a smaller micro-batch (or MinimumDoesNotFit)
    ...             continue
    ...         rec.step_ok()
    ...         break

    ``on_resize(plan)`` is called whenever the plan changes (rebuild the data loader there);
    returning False stops recovery (``Aborted``). ``out_of_memory()`` raises
    ``MinimumDoesNotFit`` when even the minimum ran out of memory."""

    def __init__(self, global_batch: int, micro_batch: Optional[int] = None, *,
                 min_batch: int = 1, max_retries: int = 8, grow_after: int = 0,
                 fit: Union[Fit, Result, None] = None,
                 on_resize: Optional[Callable[[Plan], Any]] = None) -> None:
        if on_resize is not None and not callable(on_resize):
            # Taken, it failed only at the first out of memory, in the middle of training.
            raise TypeError(f"Recovery: on_resize: expected a callable taking the new Plan, "
                            f"got {type(on_resize).__name__} {on_resize!r}")
        self._ctx = _Context()
        self._ptr = c_void_p()
        self._on_resize = on_resize
        self._exception: Optional[BaseException] = None
        self._resize_fn = _lib.RESIZE_FN(self._resize)
        opts = _lib.RecoverOptions()
        lib.batchfit_recover_options_init(byref(opts))
        # Checked here: ctypes would wrap -1 to 2**64 - 1 without a word.
        opts.global_batch = _count(global_batch, "Recovery: global_batch", allow_none=False)
        opts.micro_batch = (opts.global_batch if micro_batch is None
                            else _count(micro_batch, "Recovery: micro_batch", allow_none=False))
        opts.min_batch = _count(min_batch, "Recovery: min_batch", allow_none=False, least=1)
        opts.max_retries = _small(max_retries, "Recovery: max_retries")
        opts.grow_after = _small(grow_after, "Recovery: grow_after")
        if isinstance(fit, Result):
            fit = fit.fit
        if fit is not None and not isinstance(fit, Fit):
            raise TypeError(f"fit: expected a batchfit Result or Fit (the probe's fitted line), "
                            f"got {type(fit).__name__} {fit!r}")
        if fit is not None:
            opts.fit.valid = 1
            opts.fit.intercept_bytes = fit.intercept_bytes
            opts.fit.bytes_per_sample = fit.bytes_per_sample
            opts.fit.max_residual_bytes = fit.max_residual_bytes
            opts.fit.points = _small(fit.points, "Recovery: fit.points")
        opts.resize = self._resize_fn
        try:
            self._ctx.check(lib.batchfit_recover_create(self._ctx.ptr, byref(opts),
                                                        byref(self._ptr)))
        except BaseException:
            self._ctx.close()
            raise

    def _resize(self, plan: Any, userdata: Any) -> int:
        try:
            if self._on_resize is not None and self._on_resize(_plan(plan.contents)) is False:
                return 1
            return 0
        except BaseException as exc:  # never through the C frames: re-raised after the call
            self._exception = exc
            return 1

    def _check(self, rc: int) -> None:
        exc, self._exception = self._exception, None
        if _take_log_interrupt():
            # A Ctrl-C in a log handler asked the library to stop: no probe runs here to take
            # the request, so it is taken and raised now.
            lib.batchfit_interrupt_take()
            if exc is None:
                exc = KeyboardInterrupt()
        if exc is not None:
            raise exc
        self._ctx.check(rc)

    @property
    def plan(self) -> Plan:
        """The plan for the next optimizer step."""
        return _plan(lib.batchfit_recover_get(self._open()).contents)

    def _open(self) -> Any:
        if not self._ptr:
            raise error_for(1, "Recovery: closed")
        return self._ptr

    def step_ok(self) -> bool:
        """A step ran to the end; True when the plan changed (grew back)."""
        changed = c_int()
        self._check(lib.batchfit_recover_step_ok(self._open(), byref(changed)))
        return bool(changed.value)

    def out_of_memory(self, available_bytes: Union[int, str] = 0) -> Plan:
        """A step ran out of memory: the plan to retry it with. ``available_bytes`` is what the
        step may use now, when known: bytes, or a size as the probe takes one (``"300MiB"``);
        with the probe's fit the new micro-batch is the largest predicted to fit in it;
        otherwise (0, the default) the micro-batch is halved."""
        what = "Recovery.out_of_memory: available_bytes"
        available = (parse_size(available_bytes, what) if isinstance(available_bytes, (str, bytes))
                     else _count(available_bytes, what))
        self._check(lib.batchfit_recover_oom(self._open(), available))
        return self.plan

    is_out_of_memory = staticmethod(is_out_of_memory)

    def close(self) -> None:
        """Frees the controller (also on garbage collection)."""
        if self._ptr:
            lib.batchfit_recover_free(self._ptr)
            self._ptr = c_void_p()
        self._ctx.close()

    def __enter__(self) -> "Recovery":
        return self

    def _not_copied(self, *args: Any) -> Any:
        # A copy shared the C controller, and each copy freed it: a double free at exit.
        raise TypeError("a Recovery owns its controller in the library and cannot be copied or "
                        "pickled; make a new Recovery (with the plan's micro_batch) instead")

    __copy__ = __deepcopy__ = __reduce_ex__ = __reduce__ = _not_copied

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _plan(p: Any) -> Plan:
    return Plan(int(p.micro_batch), int(p.accumulation), int(p.last_micro_batch),
                int(p.effective_batch))


