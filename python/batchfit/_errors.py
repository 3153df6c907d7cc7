"""The library's error codes as Python exceptions, with the library's message."""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Optional, Type

if TYPE_CHECKING:
    from ._result import Result


class BatchfitError(Exception):
    """A batchfit call failed. ``code`` is the library's batchfit_code, ``name`` its name
    (``"MIN_DOES_NOT_FIT"``), ``exit_status`` what the batchfit command would exit with, and
    ``result`` the probe's result (with the trials run so far) when a probe made one."""

    code: int = -1

    def __init__(self, message: str, *, code: Optional[int] = None,
                 result: "Optional[Result]" = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.result = result

    @property
    def name(self) -> str:
        from ._lib import lib
        return lib.batchfit_error_name(self.code).decode()

    @property
    def exit_status(self) -> int:
        from ._lib import lib
        return int(lib.batchfit_exit_status(self.code))


class InvalidArgument(BatchfitError, ValueError):
    """Options that make no sense; nothing was run."""
    code = 1


class NoMemory(BatchfitError):
    """The library could not allocate host memory."""
    code = 2


class NoDevice(BatchfitError):
    """No usable device (and no fallback was allowed)."""
    code = 3


class MinimumDoesNotFit(BatchfitError):
    """Even the minimum batch size does not fit."""
    code = 4


class TrialError(BatchfitError):
    """A trial failed with an error that is not out-of-memory (a command probe; an in-process
    step's own exception is re-raised instead)."""
    code = 5


class Aborted(BatchfitError):
    """The probe was stopped (a callback or an interrupt)."""
    code = 6


class DeviceError(BatchfitError):
    """The device reported an error."""
    code = 7


class TrialLimit(BatchfitError):
    """The trial limit was reached before any batch size fitted."""
    code = 8


class ParseError(InvalidArgument):
    """A value could not be parsed (the message names the input and where it came from)."""
    code = 9


class NotFound(BatchfitError, LookupError):
    """No such entry."""
    code = 10


class OutputError(BatchfitError, OSError):
    """An output of the answer (the JSON, the picture, the answer on stdout) could not be
    written; the answer itself was found."""
    code = 11


_BY_CODE: Dict[int, Type[BatchfitError]] = {
    cls.code: cls for cls in (InvalidArgument, NoMemory, NoDevice, MinimumDoesNotFit, TrialError,
                              Aborted, DeviceError, TrialLimit, ParseError, NotFound,
                              OutputError)}


def error_for(code: int, message: str, result: "Optional[Result]" = None) -> BatchfitError:
    """The exception for a batchfit_code."""
    cls = _BY_CODE.get(code, BatchfitError)
    return cls(message or f"batchfit error {code}", code=code, result=result)
