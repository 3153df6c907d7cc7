"""What a probe found, read from the library's JSON (schema_version 1)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Union


@dataclass(frozen=True)
class Trial:
    """One trial: the batch it ran, how it ended (``"fits"``, ``"oom"``, ``"error"``), the peak
    it used when it fitted or failed with an error (bytes) or what it needed at least when it
    ran out of memory."""
    batch: int
    outcome: str
    accepted: bool
    over_budget: bool
    peak_bytes: Optional[int]
    needed_bytes_at_least: Optional[int]
    seconds: float
    reason: Optional[str]


@dataclass(frozen=True)
class Fit:
    """The straight line through the measured peaks: peak = intercept + slope * batch."""
    intercept_bytes: float
    bytes_per_sample: float
    max_residual_bytes: float
    points: int
    # The cache's remembered curve, which this probe's few verifying peaks lie on.
    remembered: bool = False

    def predict(self, batch: int) -> float:
        """The fitted peak in bytes at ``batch``."""
        return self.intercept_bytes + self.bytes_per_sample * batch


class Result:
    """A probe's result. ``batch_size`` is the settled size (None when none was settled);
    ``trials``, ``fit``, ``warnings``, ``budget`` and ``device`` are what the library reported;
    ``to_json()`` is the library's JSON, unchanged."""

    def __init__(self, json_text: str) -> None:
        self._json = json_text
        data: Dict[str, Any] = json.loads(json_text)
        self.data = data
        res = data.get("result") or {}
        self.batch_size: Optional[int] = res.get("batch_size")
        self.complete: bool = bool(res.get("complete"))
        self.error: Optional[str] = res.get("error")
        self.interrupted: bool = bool(res.get("interrupted"))
        self.smallest_failure: Optional[int] = res.get("smallest_failure")
        self.stop_reason: Optional[str] = res.get("stop_reason")
        self.trials: List[Trial] = [
            Trial(batch=t["batch"], outcome=t["outcome"], accepted=bool(t.get("accepted")),
                  over_budget=bool(t.get("over_budget")), peak_bytes=t.get("peak_bytes"),
                  needed_bytes_at_least=t.get("needed_bytes_at_least"),
                  seconds=float(t.get("seconds") or 0.0), reason=t.get("reason"))
            for t in data.get("trials", [])]
        f = data.get("fit")
        self.fit: Optional[Fit] = (Fit(f["intercept_bytes"], f["bytes_per_sample"],
                                       f["max_residual_bytes"], f["points"],
                                       bool(f.get("remembered", False))) if f else None)
        self.warnings: List[str] = list(data.get("warnings", []))
        self.budget: Dict[str, Any] = dict(data.get("budget") or {})
        self.device: Dict[str, Any] = dict(data.get("device") or {})

    @property
    def budget_bytes(self) -> Optional[int]:
        """What a trial may use: the usable memory less the margin."""
        return self.budget.get("budget_bytes")

    def to_json(self) -> str:
        """The library's JSON of this result, exactly as batchfit_result_json() wrote it."""
        return self._json

    def plot(self, path: Union[str, Path, None] = None) -> str:
        """The probe as a self-contained SVG (drawn by the library); written to ``path`` when
        given. Returns the SVG text."""
        from ._core import result_svg
        from ._errors import OutputError, error_for
        if path is not None and not isinstance(path, (str, bytes, os.PathLike)):
            raise TypeError(f"plot: path: expected a str, bytes or os.PathLike, not "
                            f"{type(path).__name__}")
        if path is not None and not os.fspath(path):
            # As the CLI's --plot '': Path("") is ".", and writing it raised IsADirectoryError.
            raise error_for(1, f"plot: path {path!r}: an empty path names no file")
        svg = result_svg(self._json)
        if path is not None:
            try:
                Path(os.fsdecode(path)).write_text(svg, encoding="utf-8")
            except OSError as exc:
                # As the CLI's --plot: an output that cannot be written is OutputError (an
                # OSError still), naming the path and why.
                raise OutputError(f"plot: cannot write {os.fsdecode(path)!r}: "
                                  f"{exc.strerror or exc}") from exc
        return svg

    def __repr__(self) -> str:
        return (f"Result(batch_size={self.batch_size}, trials={len(self.trials)}, "
                f"warnings={len(self.warnings)})")
