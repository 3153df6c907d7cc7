"""The Python package over the library, with plain-Python steps (no torch needed)."""
import argparse
import decimal
import errno
import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

import batchfit
from conftest import BUILD, ROOT

MIB = 2**20


class LinearStep:
    """A step whose memory is fixed + per_sample * batch, reported by the step itself; above
    the limit it raises `error` (MemoryError by default: out of memory)."""

    def __init__(self, fixed=10 * MIB, per_sample=MIB, limit=100 * MIB, error=MemoryError):
        self.fixed, self.per_sample, self.limit, self.error = fixed, per_sample, limit, error
        self.runs, self.ooms, self.released = [], 0, False

    def run(self, batch):
        self.runs.append(batch)
        need = self.fixed + self.per_sample * batch
        if need > self.limit:
            raise self.error(f"cannot allocate {need} bytes")
        return batchfit.PeakBytes(need)

    def on_out_of_memory(self):
        self.ooms += 1

    def release(self):
        self.released = True


def sim(capacity="200MiB"):
    return f"sim:capacity={capacity}"


def probe(factory, **kw):
    kw.setdefault("device", sim())
    kw.setdefault("margin", 0.0)
    kw.setdefault("peak_spread", 0.0)
    return batchfit.measure_batch_size(factory, **kw)


def test_finds_the_largest_batch_that_fits():
    steps = []

    def factory():
        steps.append(LinearStep())
        return steps[-1]

    result = probe(factory)
    # 10 MiB + b MiB <= 100 MiB (the step's own limit) and <= 200 MiB (the device)
    assert result.batch_size == 90
    assert len(steps) == 1 and steps[0].released
    assert steps[0].ooms == sum(1 for t in result.trials if t.outcome == "oom") > 0
    fits = [t for t in result.trials if t.outcome == "fits"]
    assert all(t.peak_bytes == 10 * MIB + t.batch * MIB for t in fits)
    assert result.fit is not None and result.fit.bytes_per_sample == pytest.approx(MIB)
    data = json.loads(result.to_json())
    assert data["result"]["batch_size"] == 90 and data["schema_version"] == 1


def test_budget_from_memory_budget_and_margin():
    result = probe(lambda: LinearStep(limit=10**12), memory_budget="60MiB", margin="10%")
    # usable 60 MiB, margin 6 MiB: 10 + b <= 54
    assert result.budget_bytes == 54 * MIB
    assert result.batch_size == 44


def test_requested_maximum_and_lattice():
    result = probe(lambda: LinearStep(), max_batch_size=50)
    assert result.batch_size == 50
    result = probe(lambda: LinearStep(), lattice="power_of_two")
    assert result.batch_size == 64
    result = probe(lambda: LinearStep(), lattice=8, minimum=3)
    assert result.batch_size == 88


def test_max_batch_size_reads_as_the_cli_and_hyperparameters_do():
    # A whole float (YAML, argparse's type=float) is that number; "", "none" and 0 are "the
    # device decides", as --max and a hyperparameters file read them (5.0 was refused).
    assert probe(lambda: LinearStep(), max_batch_size=50.0).batch_size == 50
    assert probe(lambda: LinearStep(), max_batch_size="50").batch_size == 50
    for device_decides in ("", "none", 0, None):
        assert probe(lambda: LinearStep(), max_batch_size=device_decides).batch_size == 90
    for bad in (2.5, True, [16], "abc", -1):
        with pytest.raises(batchfit.BatchfitError, match="max_batch_size: invalid value"):
            probe(lambda: LinearStep(), max_batch_size=bad)


def test_context_manager_step_is_entered_and_exited():
    events = []

    class Managed:
        def __enter__(self):
            events.append("enter")
            return LinearStep()

        def __exit__(self, *exc):
            events.append(("exit", exc))

    result = probe(Managed)
    assert result.batch_size == 90
    assert events == ["enter", ("exit", (None, None, None))]

    # A bug that stopped the search reaches __exit__ as a with-block's would, and the caller.
    class Buggy(Managed):
        def __enter__(self):
            events.append("enter")
            return LinearStep(error=ValueError, limit=50 * MIB)

    events.clear()
    with pytest.raises(ValueError):
        probe(Buggy)
    assert events[0] == "enter" and events[1][0] == "exit"
    assert events[1][1][0] is ValueError and isinstance(events[1][1][1], ValueError)


def _weak_probe(step_cls, **kw):
    refs = []

    def factory():
        step = step_cls()
        refs.append(weakref.ref(step))
        return step

    return refs, factory


def test_nothing_references_the_step_after_success():
    refs, factory = _weak_probe(LinearStep)
    probe(factory)
    assert len(refs) == 1 and refs[0]() is None


def test_nothing_references_the_step_after_oom_at_the_minimum():
    refs, factory = _weak_probe(lambda: LinearStep(limit=1))
    with pytest.raises(batchfit.MinimumDoesNotFit) as info:
        probe(factory)
    assert "minimum" in str(info.value)
    assert info.value.result is not None and info.value.result.trials[0].outcome == "oom"
    assert info.value.exit_status == 3
    assert refs[0]() is None


class Buggy(LinearStep):
    def run(self, batch):
        if batch > 5:
            self.explode(batch)
        return super().run(batch)

    def explode(self, batch):
        raise ValueError(f"bug at {batch}")


def test_a_bug_stops_the_search_and_is_reraised_with_its_traceback():
    refs, factory = _weak_probe(Buggy)
    with pytest.raises(ValueError, match="bug at") as info:
        probe(factory)
    names = [entry.name for entry in info.traceback]
    assert "explode" in names and "run" in names
    assert refs[0]() is None
    result = info.value.batchfit_result
    assert result.trials[-1].outcome == "error"
    assert "ValueError: bug at" in result.trials[-1].reason
    assert "not out-of-memory" in result.error


def test_keyboard_interrupt_aborts_releases_and_is_reraised():
    released = []

    class Interrupted(LinearStep):
        def run(self, batch):
            if batch > 1:
                raise KeyboardInterrupt
            return super().run(batch)

        def release(self):
            released.append(True)

    refs, factory = _weak_probe(Interrupted)
    with pytest.raises(KeyboardInterrupt):
        probe(factory)
    assert released == [True] and refs[0]() is None
    # The interrupt was consumed: the next probe runs normally.
    assert probe(lambda: LinearStep()).batch_size == 90


def test_an_exception_escaping_a_callback_is_not_lost(monkeypatch):
    # A signal handler of the user's raising KeyboardInterrupt as the run callback starts,
    # before its own try: ctypes reported it ("Exception ignored on calling ctypes callback"),
    # dropped it and read the trial as a fit; the probe finished as if nothing had happened.
    import batchfit._core as core

    real_run = core._StepCall.run
    calls = []

    def escaping_run(self, state, batch, report):
        calls.append(batch)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_run(self, state, batch, report)

    released = []

    class Step(LinearStep):
        def release(self):
            released.append(True)

    hook = sys.unraisablehook
    monkeypatch.setattr(core._StepCall, "run", escaping_run)
    with pytest.raises(KeyboardInterrupt):
        probe(Step)
    assert len(calls) == 2 and released == [True]
    monkeypatch.setattr(core._StepCall, "run", real_run)
    # The request to stop was consumed, and the hook is gone.
    assert probe(lambda: LinearStep()).batch_size == 90
    assert sys.unraisablehook == hook


def test_keyboard_interrupt_in_the_factory():
    def factory():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        probe(factory)
    assert probe(lambda: LinearStep()).batch_size == 90


def test_keyboard_interrupt_after_the_last_trial_does_not_stop_the_next_probe():
    # In release(), after the library's last check: it asked the library to stop and nothing
    # took the request, so the next, unrelated probe stopped on it ("aborted").
    class InterruptedOnRelease(LinearStep):
        def release(self):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        probe(InterruptedOnRelease)
    assert probe(lambda: LinearStep()).batch_size == 90
    # A Ctrl-C (SIGINT) arriving as release() returns: wherever Python handles it.
    class SignalledOnRelease(LinearStep):
        def release(self):
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        probe(SignalledOnRelease)
    assert probe(lambda: LinearStep()).batch_size == 90


def test_ctrl_c_at_any_moment_of_a_probe_is_raised():
    # A SIGINT 20-200 us into the probe lands in the library's C frames, a callback's own
    # lines or the step: it was dropped by ctypes ("Exception ignored on calling ctypes
    # callback") in about one case in six, the probe running on to its answer. Every one is
    # a KeyboardInterrupt now, and the next probe runs.
    import random

    rng = random.Random(20261201)
    previous = signal.signal(signal.SIGALRM, lambda *a: os.kill(os.getpid(), signal.SIGINT))
    raised = returned = 0
    try:
        for _ in range(40):
            try:
                signal.setitimer(signal.ITIMER_REAL, rng.uniform(20e-6, 200e-6))
                probe(lambda: LinearStep(), max_batch_size=100000, strategy="bisect")
                returned += 1
            except KeyboardInterrupt:
                raised += 1
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert (raised, returned) == (40, 0)
    assert probe(lambda: LinearStep()).batch_size == 90


@pytest.mark.parametrize("error, oom", [
    (MemoryError("x"), True),
    (RuntimeError("[enforce fail at alloc_cpu.cpp:75] DefaultCPUAllocator: can't allocate "
                  "memory: you tried to allocate 123 bytes"), True),
    (RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"), True),
    (RuntimeError("shape mismatch"), False),
    # The CLI's signatures (lib/oom.c) judge a step's RuntimeError as they judge a child's
    # output: these five were bugs in-process and out of memory under `batchfit probe --`.
    (RuntimeError("out of memory"), True),
    (RuntimeError("DefaultCPUAllocator: not enough memory: you tried to allocate 4294967296 "
                  "bytes."), True),
    (RuntimeError("MPS backend out of memory (MPS allocated: 1.00 GB)"), True),
    (RuntimeError("XPU out of memory. Tried to allocate 2.00 GiB"), True),
    (RuntimeError("step 3\nCUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate"), True),
    (RuntimeError("no out of memory errors"), False),
    # A fork or a DataLoader worker refused for memory: "Cannot allocate memory" is out of
    # memory in a command's output, and was a bug in-process.
    (OSError(errno.ENOMEM, "Cannot allocate memory"), True),
    (BlockingIOError(errno.ENOMEM, "Cannot allocate memory"), True),
    (OSError(errno.ENOENT, "No such file or directory"), False),
    (ValueError("out of memory"), False),
    (KeyError("oom"), False),
    # A DataLoader worker killed by SIGKILL, the out-of-memory killer's signal (was a bug).
    (RuntimeError("DataLoader worker (pid 4242) is killed by signal: Killed. "), True),
    (RuntimeError("DataLoader worker (pid 4242) is killed by signal: Segmentation fault."), False),
])
def test_out_of_memory_is_told_from_bugs(error, oom):
    assert batchfit.is_out_of_memory(error) is oom


def test_out_of_memory_is_followed_through_raise_from():
    # A wrapper's `raise StepFailed(...) from e` hid the MemoryError: read as a bug.
    class StepFailed(Exception):
        pass

    def wrapped(cause):
        try:
            raise cause
        except BaseException as e:
            try:
                raise StepFailed("the step failed") from e
            except StepFailed as outer:
                return outer

    assert batchfit.is_out_of_memory(wrapped(MemoryError("x")))
    assert batchfit.is_out_of_memory(wrapped(wrapped(RuntimeError("CUDA out of memory."))))
    assert not batchfit.is_out_of_memory(wrapped(ValueError("shape")))
    # Only a cause, not an exception raised while handling another (its __context__).
    try:
        try:
            raise MemoryError("x")
        except MemoryError:
            raise ValueError("a bug in the handler")
    except ValueError as bug:
        assert not batchfit.is_out_of_memory(bug)
    # A cause chain that loops ends.
    a, b = ValueError("a"), ValueError("b")
    a.__cause__, b.__cause__ = b, a
    assert not batchfit.is_out_of_memory(a)


def test_cpu_allocator_failure_counts_as_oom_in_a_probe():
    def alloc_error(message):
        return RuntimeError("DefaultCPUAllocator: can't allocate memory: " + message)

    result = probe(lambda: LinearStep(error=alloc_error))
    assert result.batch_size == 90


def test_factory_out_of_memory_means_the_model_does_not_fit():
    def factory():
        raise MemoryError("the model itself")

    with pytest.raises(batchfit.MinimumDoesNotFit, match="could not even be built"):
        probe(factory)


def test_probe_batch_size_takes_a_plain_callable():
    seen = []

    def infer(batch):
        seen.append(batch)
        if batch > 33:
            raise MemoryError
        return 1000 * batch

    result = batchfit.probe_batch_size(infer, device=sim(), margin=0.0, peak_spread=0.0)
    assert result.batch_size == 33 and 34 in seen


def test_a_step_on_a_sim_device_with_a_profile_must_report_its_peak():
    # fixed= and per_sample= describe the sim's synthetic step: a step of one's own allocates
    # nothing there, and read as peak 0 it was run up to a batch of 1048576 (on the host).
    seen = []

    class Step:
        def run(self, batch):
            seen.append(batch)

    with pytest.raises(batchfit.InvalidArgument, match="reported no peak of its own") as info:
        batchfit.measure_batch_size(Step, device="sim:capacity=1GiB,fixed=900MiB,"
                                    "per_sample=100MiB")
    assert seen == [1]
    assert "PeakBytes" in str(info.value)


def test_errors_carry_the_library_message():
    with pytest.raises(batchfit.InvalidArgument, match="sim"):
        probe(lambda: LinearStep(), device="sim:bogus=1")
    with pytest.raises(batchfit.ParseError, match="memory_budget"):
        probe(lambda: LinearStep(), memory_budget="lots")
    with pytest.raises(batchfit.ParseError, match="strategy"):
        probe(lambda: LinearStep(), strategy="guess")
    with pytest.raises(batchfit.InvalidArgument):
        probe(lambda: LinearStep(), margin=1.5)


def test_no_usable_device_falls_back_with_a_warning_or_fails():
    result = probe(lambda: LinearStep(), device="sim:capacity=1GiB,unavailable=no driver",
                   max_batch_size=24, no_device="fallback")
    assert result.batch_size == 24 and any("no driver" in w for w in result.warnings)
    # A device named explicitly and not usable is an error unless a fallback is asked for.
    with pytest.raises(batchfit.NoDevice, match="no driver"):
        probe(lambda: LinearStep(), device="sim:capacity=1GiB,unavailable=no driver")
    with pytest.raises(batchfit.NoDevice, match="no driver"):
        probe(lambda: LinearStep(), device="sim:capacity=1GiB,unavailable=no driver",
              no_device="error")


def test_sizes_and_margins_say_what_they_mean():
    # A whole float is a whole number of bytes; a small int margin is ambiguous.
    result = probe(lambda: LinearStep(), memory_budget=150.0 * MIB)
    assert result.batch_size == 90
    with pytest.raises(batchfit.InvalidArgument, match="5 bytes.*0.05"):
        probe(lambda: LinearStep(), margin=5)
    # So is a whole float margin (it was read as a fraction and refused): 150 MiB less 60 MiB
    # leaves 90 MiB, 10 + b MiB.
    for margin in (60 * MIB, 60.0 * MIB):
        assert probe(lambda: LinearStep(), memory_budget="150MiB", margin=margin).batch_size == 80
    with pytest.raises(batchfit.InvalidArgument, match="5 bytes.*0.05"):
        probe(lambda: LinearStep(), margin=5.0)
    with pytest.raises(batchfit.InvalidArgument, match="whole number of bytes, got 1.5"):
        probe(lambda: LinearStep(), margin=1.5)
    # A budget with no unit under 1024 is refused as the CLI refuses it (it ran a trial against
    # 285 B and advised a smaller model); "300B" says bytes on purpose.
    for budget in (300, "300", " 300 ", b"300", decimal.Decimal(300)):
        with pytest.raises(batchfit.InvalidArgument, match="has no unit and would be 300 bytes"):
            probe(lambda: LinearStep(), memory_budget=budget)
    # So is a margin, whatever carries the number: "5" from YAML or the environment was 5 bytes
    # (no margin at all), where the int 5 was refused.
    for margin in (5, "5", b"5", " 5", "5.", decimal.Decimal(5)):
        with pytest.raises(batchfit.InvalidArgument, match="has no unit and would be 5 bytes"):
            probe(lambda: LinearStep(), margin=margin)
    assert probe(lambda: LinearStep(), memory_budget="150MiB", margin="60MiB").batch_size == 80
    # The spread as a percentage, as --peak-spread takes it; anything else is InvalidArgument.
    assert probe(lambda: LinearStep(), peak_spread="5%").batch_size == \
        probe(lambda: LinearStep(), peak_spread=0.05).batch_size
    for spread in ("lots", [0.05], True):
        with pytest.raises(batchfit.InvalidArgument, match="peak_spread"):
            probe(lambda: LinearStep(), peak_spread=spread)


@pytest.mark.parametrize("hp, expected", [
    (None, None), ({}, None), ({"max_batch_size": None}, None), ({"max_batch_size": ""}, None),
    ({"max_batch_size": 0}, None), ({"max_batch_size": "0"}, None),
    ({"max_batch_size": 32}, 32), ({"max_batch_size": " 48 "}, 48),
    # A whole float, as YAML or argparse's type=float give it.
    ({"max_batch_size": 16.0}, 16), ({"max_batch_size": 0.0}, None),
    ({"batch_size": 64}, None),
    ({"batch_size": 64, "max_batch_size": 8}, 8),
])
def test_requested_batch_size(hp, expected):
    assert batchfit.requested_batch_size(hp) == expected


@pytest.mark.parametrize("bad", [-1, "-3", "abc", 2.5, -4.0, True, False, "1e3x", "8.0"])
def test_requested_batch_size_rejects_bad_values(bad):
    with pytest.raises(batchfit.InvalidArgument, match="max_batch_size: invalid value"):
        batchfit.requested_batch_size({"max_batch_size": bad})


@pytest.mark.parametrize("bad", ["x", "hp.json", 8, ["max_batch_size", 8], ""])
def test_requested_batch_size_wants_a_mapping(bad):
    # "x" raised a bare AttributeError ('str' object has no attribute 'get').
    with pytest.raises(TypeError, match="hyperparameters: expected a mapping"):
        batchfit.requested_batch_size(bad)


def test_counts_and_keys_the_cli_refuses_are_refused(tmp_path):
    # minimum=0 ran as minimum 1 (the library reads 0 as "not given"); the CLI refuses
    # --min 0, and Python refused -3 as not a positive number. sample_count=0 and
    # estimate=0 stay "not given", as max_batch_size=0 is.
    with pytest.raises(batchfit.InvalidArgument,
                       match="^minimum: expected a positive whole number, got 0$"):
        probe(lambda: LinearStep(), minimum=0)
    with pytest.raises(batchfit.InvalidArgument, match="^minimum: .* got 0$"):
        batchfit.probe_command(["true"], device="host", minimum=0)
    assert probe(lambda: LinearStep(), minimum=1, sample_count=50, estimate=20).batch_size == 50
    assert probe(lambda: LinearStep(), sample_count=0, estimate=0).batch_size == \
        probe(lambda: LinearStep()).batch_size
    # As --cache-key '': an empty key names no model (it was accepted).
    for key in ("", "a\0b", 7):
        with pytest.raises(batchfit.InvalidArgument, match="^cache_key: "):
            probe(lambda: LinearStep(), cache=True, cache_key=key, cache_dir=str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_a_caught_error_prints_nothing_and_a_first_cached_run_no_error(tmp_path):
    # Every library failure was logged at ERROR before it was raised: with no logging set up,
    # Python's last-resort handler printed it though the caller caught it, and a first cached
    # run printed "cache: no entry ... in DIR". The exception carries the text; the log has it
    # at DEBUG. A real warning still reaches stderr.
    script = (
        "import batchfit\n"
        "try:\n"
        "    batchfit.parse_size('abc')\n"
        "except batchfit.ParseError as e:\n"
        "    assert 'abc' in str(e)\n"
        "class Step:\n"
        "    def run(self, batch):\n"
        "        if batch > 40: raise MemoryError('no room')\n"
        "        return batchfit.PeakBytes(2**20 * (1 + batch))\n"
        "    def release(self): pass\n"
        f"r = batchfit.measure_batch_size(Step, device='sim:capacity=200MiB', margin=0.0,\n"
        f"    peak_spread=0.0, cache=True, cache_key='m', cache_dir={str(tmp_path)!r})\n"
        "print(r.batch_size)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    out = subprocess.run(["/usr/bin/python3", "-c", script], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "40\n"
    assert "abc" not in out.stderr and "no entry" not in out.stderr, out.stderr


def test_vram_flag_matches_the_cli(monkeypatch):
    assert batchfit.VRAM_LIMIT_GB_FLAG == "--vram-limit-gb"
    help_text = subprocess.run([str(BUILD / "batchfit"), "probe", "--help"], check=True,
                               capture_output=True, text=True).stdout
    # The CLI wraps its help; the words are the same.
    assert " ".join(batchfit.VRAM_LIMIT_GB_HELP.split()) in " ".join(help_text.split())
    parser = argparse.ArgumentParser()
    batchfit.add_vram_limit_argument(parser)
    assert parser.parse_args(["--vram-limit-gb", "1.5"]).vram_limit_gb == 1.5
    assert parser.parse_args([]).vram_limit_gb is None
    assert batchfit.VRAM_LIMIT_GB_HELP in parser.format_help().replace("\n", " ") or \
        "Precedence" in parser.format_help()
    with pytest.raises(SystemExit):
        parser.parse_args(["--vram-limit-gb", "0"])


def test_values_that_are_no_text_are_refused_or_written_out():
    # None and b"500MiB" were parsed as "None" and "b'500MiB'"; a float's repr has an exponent
    # the library does not read (1e-15 GiB: "expected a positive number").
    for kw in ({"strategy": None}, {"device": None}, {"memory_budget": [1]}):
        with pytest.raises(TypeError, match="expected a str or a number, got"):
            probe(lambda: LinearStep(), **kw)
    assert probe(lambda: LinearStep(), memory_budget=b"200MiB").batch_size == 90
    with pytest.raises(batchfit.ParseError, match="rounds to zero bytes"):
        batchfit.resolve_vram_limit(1e-15)
    with pytest.raises(batchfit.ParseError, match="is too large"):
        batchfit.resolve_vram_limit(1e300)
    assert batchfit.resolve_vram_limit(7.5) == (15 << 29, "--vram-limit-gb")
    assert batchfit.resolve_vram_limit(decimal.Decimal("7.5"))[0] == 15 << 29
    np = pytest.importorskip("numpy")
    assert batchfit.resolve_vram_limit(np.float32(0.5))[0] == 1 << 29
    assert batchfit.requested_batch_size({"max_batch_size": decimal.Decimal("16")}) == 16
    with pytest.raises(batchfit.InvalidArgument, match="invalid value \\[16\\]"):
        batchfit.requested_batch_size({"max_batch_size": [16]})


def test_vram_precedence(monkeypatch):
    monkeypatch.delenv("VRAM_LIMIT_GB", raising=False)
    monkeypatch.delenv("BATCHFIT_VRAM_LIMIT_GB", raising=False)
    assert batchfit.resolve_vram_limit() == (0, "none")
    monkeypatch.setenv("BATCHFIT_VRAM_LIMIT_GB", "2")
    assert batchfit.resolve_vram_limit() == (2 * 2**30, "environment variable BATCHFIT_VRAM_LIMIT_GB")
    monkeypatch.setenv("VRAM_LIMIT_GB", "1")
    assert batchfit.resolve_vram_limit() == (2**30, "environment variable VRAM_LIMIT_GB")
    monkeypatch.setenv("VRAM_LIMIT_GB", "")  # empty counts as unset
    assert batchfit.resolve_vram_limit()[0] == 2 * 2**30
    assert batchfit.resolve_vram_limit("0.5") == (2**29, "--vram-limit-gb")
    for bad in ("0", "-1", "nan", "inf", "lots"):
        with pytest.raises(batchfit.ParseError):
            batchfit.resolve_vram_limit(bad)
    monkeypatch.setenv("VRAM_LIMIT_GB", "nan")
    with pytest.raises(batchfit.ParseError, match="VRAM_LIMIT_GB"):
        batchfit.resolve_vram_limit()


def test_limit_cuda_memory_is_read_back_by_the_probes(monkeypatch):
    monkeypatch.setenv("VRAM_LIMIT_GB", "8")
    try:
        assert batchfit.limit_cuda_memory(0.0625) == 64 * MIB
        assert batchfit.resolve_vram_limit() == (64 * MIB, "limit_cuda_memory()")
        result = probe(lambda: LinearStep(limit=10**12))
        assert result.data["vram_limit"] == {"bytes": 64 * MIB, "source": "limit_cuda_memory()"}
        assert result.batch_size == 54  # 10 MiB + b MiB <= 64 MiB
        # An explicit argument still wins.
        assert probe(lambda: LinearStep(limit=10**12), vram_limit_gb=0.125).batch_size == 118
    finally:
        batchfit.limit_cuda_memory(None)
    assert batchfit.resolve_vram_limit()[1] == "environment variable VRAM_LIMIT_GB"


def test_recovery_keeps_the_effective_batch_through_an_injected_oom():
    resized = []
    seen_samples = []
    limit = {"micro": 64}
    rec = batchfit.Recovery(global_batch=64, micro_batch=64, grow_after=2,
                            on_resize=resized.append)
    injected = 0
    for step in range(8):
        while True:
            plan = rec.plan
            try:
                samples = 0
                for micro in plan.micro_batches():
                    if step == 2 and injected == 0 or micro > limit["micro"]:
                        injected += 1
                        raise MemoryError("injected")
                    samples += micro
                break
            except MemoryError as exc:
                assert rec.is_out_of_memory(exc)
                limit["micro"] = 40  # memory got tighter: 64 no longer fits
                rec.out_of_memory()
        seen_samples.append(samples)
        rec.step_ok()
    assert seen_samples == [64] * 8  # the same effective batch on every step
    assert resized and all(p.effective_batch == 64 for p in resized)
    assert resized[0].micro_batch == 32 and resized[0].accumulation == 2
    rec.close()


def test_recovery_refuses_below_the_minimum():
    with batchfit.Recovery(global_batch=8, micro_batch=2, min_batch=2) as rec:
        with pytest.raises(batchfit.MinimumDoesNotFit):
            rec.out_of_memory()


def test_recovery_checks_its_counts_and_keeps_the_minimum():
    # ctypes would wrap -1 into 2**64 - 1: each count is checked first, naming it.
    for kwargs, what in (({"global_batch": -1, "micro_batch": 8}, "global_batch"),
                         ({"global_batch": 8, "micro_batch": -1}, "micro_batch"),
                         ({"global_batch": 8, "max_retries": -1}, "max_retries"),
                         ({"global_batch": 8, "grow_after": 2**32}, "grow_after"),
                         ({"global_batch": 8.0}, "global_batch")):
        with pytest.raises(batchfit.InvalidArgument, match=what):
            batchfit.Recovery(**kwargs)
    rec = batchfit.Recovery(global_batch=9, micro_batch=8, min_batch=2)
    assert rec.plan.micro_batches() == [5, 4]  # not 8 + 1: every micro-batch holds two
    # As even as the fewest steps go: 16 x 6 + 1 had a last micro-batch of one sample.
    even = batchfit.Recovery(global_batch=97, micro_batch=16)
    assert even.plan.micro_batches() == [14] * 6 + [13]
    even.close()
    with pytest.raises(batchfit.InvalidArgument, match="available_bytes"):
        rec.out_of_memory(-1)
    # A size as the probe takes one (it was refused: "expected a whole number").
    sized = batchfit.Recovery(global_batch=64, micro_batch=32)
    assert sized.out_of_memory("300MiB").micro_batch == 16
    with pytest.raises(batchfit.ParseError, match="available_bytes.*3x"):
        sized.out_of_memory("3x")
    sized.close()
    rec.close()
    with pytest.raises(batchfit.InvalidArgument, match="closed"):
        rec.step_ok()
    with pytest.raises(batchfit.InvalidArgument, match="closed"):
        rec.out_of_memory()


def test_recovery_resize_callback_exception_is_reraised():
    def resize(plan):
        raise RuntimeError("loader broke")

    with batchfit.Recovery(global_batch=8, micro_batch=8, on_resize=resize) as rec:
        with pytest.raises(RuntimeError, match="loader broke"):
            rec.out_of_memory()


def test_probe_command_runs_the_library_command_probe():
    tool = str(BUILD / "tests" / "childtool")
    result = batchfit.probe_command([tool, "grow", "1024", "4096"], device="host",
                                    memory_budget="64MiB", max_trials=30)
    assert result.batch_size is not None and result.batch_size > 1
    assert result.data["command"][0] == tool
    fits = [t for t in result.trials if t.outcome == "fits" and t.batch == result.batch_size]
    assert fits and fits[0].peak_bytes <= result.budget_bytes
    with pytest.raises(batchfit.InvalidArgument):
        batchfit.probe_command("not a list")


def test_probe_command_bug_is_a_trial_error():
    tool = str(BUILD / "tests" / "childtool")
    with pytest.raises(batchfit.TrialError) as info:
        batchfit.probe_command([tool, "print", "Traceback: boom", "3"], device="host",
                               memory_budget="64MiB", cgroups=False)
    assert info.value.exit_status == 4 and info.value.result.trials[0].outcome == "error"


def test_oom_patterns_take_one_string_as_one_pattern_and_refuse_an_empty_one():
    # A str was read one character a pattern: its " " matched "Starting epoch 3", and every
    # trial was out of memory (MinimumDoesNotFit).
    command = ["sh", "-c", "echo Starting epoch {batch}"]
    kw = dict(device="host", memory_budget="200MiB", max_batch_size=8, cgroups=False)
    result = batchfit.probe_command(command, oom_patterns="CUDA out of memory", **kw)
    assert result.batch_size == 8 and all(t.outcome == "fits" for t in result.trials)
    # It is one pattern, and it is used: past epoch 5 the command "runs out of memory".
    for patterns in ("epoch [6-9]$", b"epoch [6-9]$", ["epoch [6-9]$"]):
        assert batchfit.probe_command(command, oom_patterns=patterns, **kw).batch_size == 5
    # "" matches every line: refused, as --oom-pattern '' is ("" as the argument ran with
    # no pattern at all).
    for patterns in ("", [""], ["CUDA out of memory", ""]):
        with pytest.raises(batchfit.InvalidArgument, match=r"^oom_patterns(\[1\])?: the "
                                                           r"pattern '' is empty"):
            batchfit.probe_command(command, oom_patterns=patterns, **kw)
    with pytest.raises(batchfit.InvalidArgument, match="^oom_patterns: .*NUL byte"):
        batchfit.probe_command(command, oom_patterns="out of\0 memory", **kw)
    with pytest.raises(TypeError, match=r"^oom_patterns\[1\]: .*None"):
        batchfit.probe_command(command, oom_patterns=["out of memory", None], **kw)


def test_probe_command_arguments_are_str_bytes_or_paths():
    kw = dict(device="host", memory_budget="200MiB", max_batch_size=4, cgroups=False)
    # "a\0b" reached the command as "a", and this one fitted.
    with pytest.raises(ValueError, match=r"^argv\[3\]: 'a\\x00b' holds a NUL byte"):
        batchfit.probe_command(["sh", "-c", 'test "$0" = a', "a\0b"], **kw)
    with pytest.raises(ValueError, match=r"^argv\[0\]: .*NUL byte"):
        batchfit.probe_command([b"sh\0", "-c", "true"], **kw)
    # None ran as "None" ("command not found or not executable: None"), 3 as "3".
    for bad in ([None, "x"], ["echo", "x", 3]):
        with pytest.raises(TypeError, match=r"^argv\[\d\]: expected str, bytes or os.PathLike"):
            batchfit.probe_command(bad, **kw)
    with pytest.raises(batchfit.InvalidArgument, match="^argv: expected a non-empty list"):
        batchfit.probe_command(iter([]), **kw)
    # bytes and os.PathLike as subprocess takes them (b"-c" ran as "b'-c'").
    sh = shutil.which("sh")
    result = batchfit.probe_command([Path(sh), b"-c", "test {batch} -le 4"], **kw)
    assert result.batch_size == 4 and result.data["command"][:2] == [sh, "-c"]


@pytest.mark.parametrize("name, value", [
    ("device", "host\0sim:capacity=1GiB"), ("memory_budget", "200MiB\0x"),
    ("strategy", "model\0x"), ("cache_dir", "/tmp\0x"), ("margin", "5%\0x"),
])
def test_string_arguments_with_a_nul_byte_are_refused(name, value):
    # C reads up to the first NUL: "host\0sim:..." ran on the host, the rest dropped unsaid.
    kw = dict(device="host", memory_budget="200MiB", max_batch_size=4, cgroups=False)
    kw[name] = value
    with pytest.raises(ValueError, match=r"^" + name + r": .*holds a NUL byte"):
        batchfit.probe_command(["true"], **kw)


@pytest.mark.parametrize("name, value", [
    ("timeout", -1), ("timeout", float("nan")), ("timeout", float("inf")),
    ("timeout", 2e9), ("timeout", True), ("timeout", "soon"),
    ("sample_interval", 0), ("sample_interval", -0.02), ("sample_interval", 1e7),
])
def test_probe_command_names_the_bad_duration(name, value):
    # timeout=-1 was refused as "sample_interval (0.02 s) must be in (0, 1e6], timeout_seconds
    # (-1) in [0, 1e9] and kill_grace_seconds (2) ...": three fields, two of them not given.
    with pytest.raises(batchfit.InvalidArgument) as info:
        batchfit.probe_command(["true"], device="host", memory_budget="200MiB",
                               **{name: value})
    message = str(info.value)
    most = "1e+09" if name == "timeout" else "1e+06"
    assert message.startswith(f"{name}: invalid value {value!r}: expected a positive number "
                              f"of seconds, at most {most}"), message
    assert "kill_grace" not in message and "timeout_seconds" not in message
    assert ("sample_interval" in message) == (name == "sample_interval")


def test_timeout_zero_is_no_timeout():
    # As the C field's 0 (batchfit.h: "0 = none"); it was so before the checks above.
    result = batchfit.probe_command(["true"], device="host", memory_budget="200MiB",
                                    max_batch_size=4, cgroups=False, timeout=0)
    assert result.batch_size == 4


def _svg_ok(path):
    subprocess.run(["xmllint", "--noout", str(path)], check=True)
    return Path(path).read_text()


def test_plot_draws_every_kind_of_trial(tmp_path):
    result = probe(lambda: LinearStep(), memory_budget="150MiB", margin="5%",
                   vram_limit_gb=0.1875, peak_spread=0.02)
    svg = _svg_ok(result.plot(tmp_path / "p.svg") and tmp_path / "p.svg")
    assert svg.startswith("<?xml") and "</svg>" in svg
    assert f"batch_size={result.batch_size}" in svg
    assert "budget" in svg and "VRAM limit" in svg and "margin" in svg and "fit " in svg
    for i, t in enumerate(result.trials, 1):
        assert f"trial {i}: batch {t.batch} " in svg
    assert "out of memory" in svg and "MiB" in svg


def test_plot_refuses_an_empty_path(tmp_path, monkeypatch):
    # Path("") is ".": it raised IsADirectoryError: '.'.
    result = probe(lambda: LinearStep())
    monkeypatch.chdir(tmp_path)
    for path in ("", b""):
        with pytest.raises(batchfit.InvalidArgument, match="an empty path names no file"):
            result.plot(path)
    assert list(tmp_path.iterdir()) == []


def test_plot_that_cannot_be_written_is_an_output_error(tmp_path):
    # IsADirectoryError and FileNotFoundError came out as they were, where OutputError is what
    # an answer's output that cannot be written raises (an OSError still).
    result = probe(lambda: LinearStep())
    for path in (tmp_path, tmp_path / "missing" / "p.svg"):
        with pytest.raises(batchfit.OutputError, match="plot: cannot write") as info:
            result.plot(path)
        assert isinstance(info.value, OSError) and str(path) in str(info.value)
    with pytest.raises(TypeError, match="plot: path"):
        result.plot(3)
    assert result.plot(os.fsencode(tmp_path / "p.svg")).startswith("<?xml")


def test_a_release_error_keeps_the_probe_s_own_error_as_its_context():
    # The minimum does not fit, then release() raises: the caller got a bare ValueError, and
    # MinimumDoesNotFit only as an undocumented attribute's text.
    class Step(LinearStep):
        def release(self):
            raise ValueError("release broke")

    with pytest.raises(ValueError, match="release broke") as info:
        probe(lambda: Step(limit=MIB))
    assert isinstance(info.value.__context__, batchfit.MinimumDoesNotFit)
    assert info.value.batchfit_result.batch_size is None


def test_a_host_oom_message_is_not_what_the_trial_needed():
    # On the host nothing says what was in use: the allocation a message names ("Tried to
    # allocate 20.00 MiB") is not the trial's need, and read as one it warned that something
    # other than the budget stopped a 100+ MiB step holding 20 MiB.
    class Step(LinearStep):
        def run(self, batch):
            if batch > 10:
                raise MemoryError("CUDA out of memory. Tried to allocate 20.00 MiB")
            return super().run(batch)

    result = probe(lambda: Step(limit=10**12), device="sim:capacity=200MiB")
    assert result.batch_size == 10
    ooms = [t for t in result.trials if t.outcome == "oom"]
    assert ooms and all(t.peak_bytes != 20 * MIB for t in ooms)
    assert not any("holding 20.00 MiB" in w for w in result.warnings)


def test_the_cache_tells_models_apart_only_by_what_the_caller_names(tmp_path):
    # Two models built by lambdas: their factories' __qualname__ is "<lambda>" for both, which
    # named the step, and the second probe started from the first's remembered answer.
    small = lambda: LinearStep(per_sample=MIB, limit=10**12)  # noqa: E731
    large = lambda: LinearStep(per_sample=10 * MIB, limit=10**12)  # noqa: E731
    kw = dict(cache=True, cache_dir=str(tmp_path), memory_budget="150MiB")
    for factory in (small, large):
        result = probe(factory, **kw)
        assert any("cache off" in w and "cache_key" in w for w in result.warnings)
        assert not result.data["cache"]["hit"]
    assert list(tmp_path.iterdir()) == []
    first = {}
    for key, factory, answer in (("small", small, 140), ("large", large, 14)):
        first[key] = probe(factory, cache_key=key, **kw)
        assert first[key].batch_size == answer and not first[key].data["cache"]["hit"]
    for key, factory, answer in (("small", small, 140), ("large", large, 14)):
        again = probe(factory, cache_key=key, **kw)
        assert again.batch_size == answer
        assert again.data["cache"]["hit"] and again.data["cache"]["remembered_batch_size"] == answer
        assert len(again.trials) < len(first[key].trials)
    # A name the caller gives is a key too.
    probe(small, name="small-model", **kw)
    assert probe(small, name="small-model", **kw).data["cache"]["hit"]
    # A remembered size that no longer holds (the model under that key grew) is a warning here
    # as in the CLI (it was the CLI's summary line alone).
    grown = lambda: LinearStep(per_sample=2 * MIB, limit=10**12)  # noqa: E731
    tighter = probe(grown, cache_key="small", **kw)
    assert tighter.data["cache"]["hit"] and tighter.batch_size == 70
    assert ("the remembered batch size 140 no longer held (the budget or the program's memory "
            "changed): 70 now") in tighter.warnings


def test_plot_of_a_failed_probe_and_odd_text(tmp_path):
    with pytest.raises(ValueError) as info:
        probe(lambda: Buggy(), name="<&\"step\">")
    result = info.value.batchfit_result
    svg = result.plot()
    (tmp_path / "e.svg").write_text(svg)
    _svg_ok(tmp_path / "e.svg")
    assert "error" in svg and "bug at" in svg


def test_cli_plot_reads_the_json_back(tmp_path):
    result = probe(lambda: LinearStep())
    (tmp_path / "r.json").write_text(result.to_json())
    out = tmp_path / "r.svg"
    subprocess.run([str(BUILD / "batchfit"), "plot", str(tmp_path / "r.json"), "-o", str(out)],
                   check=True)
    assert _svg_ok(out) == result.plot()
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 7}')
    proc = subprocess.run([str(BUILD / "batchfit"), "plot", str(bad), "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "schema_version" in proc.stderr


def test_library_found_through_batchfit_library():
    env = dict(os.environ, BATCHFIT_LIBRARY=str(BUILD / "nonexistent.so"))
    proc = subprocess.run(["/usr/bin/python3", "-c", "import batchfit"], env=env,
                          cwd=str(ROOT / "python"), capture_output=True, text=True)
    assert proc.returncode != 0 and "BATCHFIT_LIBRARY" in proc.stderr


def test_version_matches_the_package():
    assert batchfit.version() == batchfit.__version__


def test_cli_estimate_model_state_alone():
    cmd = [str(BUILD / "batchfit"), "estimate", "--params", "7.5B", "--precision", "mixed16",
           "--optimizer", "adam"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "model state        111.76 GiB (16 bytes per parameter)" in proc.stdout
    assert "activations        unknown" in proc.stdout
    proc = subprocess.run([str(BUILD / "batchfit"), "estimate", "--params", "1B", "--optimizer",
                           "adam", "--device-memory", "8GiB"], capture_output=True, text=True)
    assert proc.returncode == 3 and "the model state alone does not fit" in proc.stdout


def test_small_requested_maximum_warns_with_both_numbers():
    result = probe(lambda: LinearStep(limit=10**12), max_batch_size=20, memory_budget="110MiB")
    # 10 MiB + 20 MiB of a 110 MiB budget; (110 - 10) / 1 = 100 would fit
    assert result.batch_size == 20
    assert result.warnings == ["max_batch_size=20 uses 27% of the budget; about 100 would fit "
                               "(by the fit, not measured)"]


class CountingStep(LinearStep):
    """Reports its peak as LinearStep does, but returns a count (of correct predictions, say)
    the way training steps often do."""

    def run(self, batch):
        peak = super().run(batch)
        self.last_peak = int(peak)
        return batch // 2


def test_only_peak_bytes_is_a_peak():
    # A plain int is not bytes: taken as the peak, a count made the answer 13x too large.
    # Here nothing else measures (the simulated device leaves an in-process step's peak to
    # the step), so every trial reads 0 bytes, not half its batch.
    counted = probe(lambda: CountingStep(limit=2**50), max_batch_size=1000)
    assert any(t.batch >= 2 for t in counted.trials)
    assert all(not t.peak_bytes for t in counted.trials)
    reported = probe(lambda: LinearStep())
    assert reported.batch_size == 90
    assert all(t.peak_bytes for t in reported.trials if t.outcome == "fits")
    with pytest.raises(ValueError):
        batchfit.PeakBytes(-1)
    assert batchfit.PeakBytes(7) == 7


def test_a_peak_past_64_bits_is_an_error_not_dropped():
    # PeakBytes(2**70) was dropped, and the trial measured some other way (here: not at all).
    class Huge(LinearStep):
        def run(self, batch):
            super().run(batch)
            return batchfit.PeakBytes(2**70)

    with pytest.raises(ValueError, match=r"^PeakBytes: 1180591620717411303424 bytes is too "
                                         r"large \(at most 18446744073709551615\)"):
        probe(lambda: Huge())
    for n in (2**64, 10**30):
        with pytest.raises(ValueError, match="too large"):
            batchfit.PeakBytes(n)
    assert batchfit.PeakBytes(2**64 - 1) == 2**64 - 1


class _FakeTorch:
    """What _StepCall.run asks of torch on a CUDA device: max_memory_reserved() is 123."""

    class cuda:
        @staticmethod
        def reset_peak_memory_stats(index):
            pass

        @staticmethod
        def synchronize(index):
            pass

        @staticmethod
        def max_memory_reserved(index):
            return 123


def test_peak_bytes_wins_over_torch_on_cuda():
    # On CUDA a step's PeakBytes was always replaced by torch.cuda.max_memory_reserved();
    # the library's step report says the step's own measurement wins, as on the host.
    import ctypes
    from batchfit import _lib
    from batchfit._core import _StepCall

    class Returns:
        def __init__(self, value):
            self.value = value

        def run(self, batch):
            return self.value

    for returned, expected in ((batchfit.PeakBytes(5 * MIB), 5 * MIB), (7, 123), (None, 123)):
        call = _StepCall(lambda: None)
        call.torch, call.cuda_index, call.step = _FakeTorch, 0, Returns(returned)
        report = _lib.StepReport()
        assert call.run(None, 4, ctypes.pointer(report)) == _lib.FITS
        assert (report.peak_known, report.peak_bytes) == (1, expected), returned
    # One past 2^64 - 1 that slipped past PeakBytes' check is an error, not torch's reading.
    call = _StepCall(lambda: None)
    call.torch, call.cuda_index = _FakeTorch, 0
    call.step = Returns(int.__new__(batchfit.PeakBytes, 2**70))
    report = _lib.StepReport()
    assert call.run(None, 4, ctypes.pointer(report)) == _lib.ERROR
    assert isinstance(call.exception, ValueError) and "too large" in str(call.exception)
    assert not report.peak_known


def test_counts_take_numpy_integers_and_refuse_64_bit_overflow():
    np = pytest.importorskip("numpy")
    result = probe(lambda: LinearStep(), max_batch_size=np.int64(64))
    assert result.batch_size == 64
    with pytest.raises(batchfit.InvalidArgument, match="too large"):
        probe(lambda: LinearStep(), max_batch_size=2**64 + 64)
    with pytest.raises(batchfit.ParseError, match="too large"):
        probe(lambda: LinearStep(), memory_budget=2**64 + 2**30)
    # lattice takes them as the counts do (a numpy 8 was refused as not a multiple).
    assert probe(lambda: LinearStep(), lattice=np.int64(8)).batch_size % 8 == 0
    # max_trials is an unsigned int in C: 2**32 + 1 ran one trial (it wrapped to 1).
    for n in (2**32, 2**32 + 1, 2**40):
        with pytest.raises(batchfit.InvalidArgument,
                           match=rf"^max_trials: {n} is too large \(at most 4294967295\)$"):
            probe(lambda: LinearStep(), max_trials=n)
    # One message for what is refused below it (-1 said "0 or more", then 0 "at least 1").
    for n in (-1, 0):
        with pytest.raises(batchfit.InvalidArgument,
                           match=rf"^max_trials: expected a positive whole number, got {n}$"):
            probe(lambda: LinearStep(), max_trials=n)


def test_cache_dir_takes_a_path_and_refuses_an_empty_one_or_another_type(tmp_path):
    # A pathlib.Path raised AttributeError from inside the package; "" turned the cache off
    # without a word (no entry read, none written).
    first = probe(lambda: LinearStep(), cache=True, cache_key="m", cache_dir=tmp_path)
    assert [p.name for p in tmp_path.iterdir()], "the entry was written"
    again = probe(lambda: LinearStep(), cache=True, cache_key="m", cache_dir=tmp_path)
    assert again.batch_size == first.batch_size and len(again.trials) < len(first.trials)
    with pytest.raises(batchfit.InvalidArgument, match="^cache_dir: an empty path names no"):
        probe(lambda: LinearStep(), cache=True, cache_key="m", cache_dir="")
    with pytest.raises(batchfit.InvalidArgument, match="^cache_dir: expected a string, got int 5$"):
        probe(lambda: LinearStep(), cache=True, cache_key="m", cache_dir=5)


def test_cache_is_a_flag_and_a_count_s_message_says_what_it_takes():
    for bad in ("no", 1, None):
        with pytest.raises(batchfit.InvalidArgument, match=r"^cache: expected True or False, got "):
            probe(lambda: LinearStep(), cache=bad, cache_key="m")
    np = pytest.importorskip("numpy")
    assert probe(lambda: LinearStep(), cache=np.bool_(False), cache_key="m").batch_size == 90
    # A numpy bool is no multiple, as True is none.
    for flag in (True, np.True_):
        with pytest.raises(batchfit.InvalidArgument, match="^lattice: expected"):
            probe(lambda: LinearStep(), lattice=flag)
    # max_retries takes 0; -1 was refused as "not a positive whole number".
    with pytest.raises(batchfit.InvalidArgument,
                       match=r"^Recovery: max_retries: expected a whole number, 0 or more, got -1$"):
        batchfit.Recovery(global_batch=64, micro_batch=16, max_retries=-1)


def test_recovery_refuses_a_minimum_of_zero():
    # As measure_batch_size refuses minimum=0 (it was taken as 1 without a word).
    with pytest.raises(batchfit.InvalidArgument,
                       match=r"^Recovery: min_batch: expected a positive whole number, got 0$"):
        batchfit.Recovery(global_batch=64, micro_batch=16, min_batch=0)


def test_recovery_refuses_a_fit_of_another_type():
    for bad in ("abc", {"intercept_bytes": 1}):
        with pytest.raises(TypeError, match="^fit: expected a batchfit Result or Fit"):
            batchfit.Recovery(global_batch=64, micro_batch=16, fit=bad)


def test_recovery_refuses_a_fit_that_is_no_curve_and_a_callback_that_is_none():
    # Each was taken, and failed (or was ignored) only at the first out of memory.
    for bad in (batchfit.Fit(float("nan"), 1.0, 0.0, 3), batchfit.Fit(0.0, float("inf"), 0.0, 3),
                batchfit.Fit(0.0, -1.0, 0.0, 3)):
        with pytest.raises(batchfit.InvalidArgument, match="is not a curve"):
            batchfit.Recovery(global_batch=64, micro_batch=16, fit=bad)
    with pytest.raises(batchfit.InvalidArgument, match="fit.points"):
        batchfit.Recovery(global_batch=64, micro_batch=16, fit=batchfit.Fit(0.0, 1.0, 0.0, -1))
    with pytest.raises(TypeError, match="on_resize: expected a callable"):
        batchfit.Recovery(global_batch=64, micro_batch=16, on_resize=5)


def test_a_chained_exception_does_not_keep_the_step():
    refs = []

    class Wrapped(LinearStep):
        def run(self, batch):
            try:
                raise KeyError("inner")
            except KeyError as inner:
                raise ValueError("outer") from inner

    def factory():
        step = Wrapped()
        refs.append(weakref.ref(step))
        return step

    with pytest.raises(ValueError) as info:
        probe(factory)
    gc.collect()
    assert info.value.__cause__ is not None
    assert refs and refs[0]() is None


def test_probes_in_two_threads_take_turns():
    import threading
    answers = {}

    def run(key):
        answers[key] = probe(lambda: LinearStep()).batch_size

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == {0: 90, 1: 90}

    class Nested(LinearStep):
        def run(self, batch):
            probe(lambda: LinearStep())
            return super().run(batch)

    with pytest.raises(batchfit.InvalidArgument, match="already running in this thread"):
        probe(lambda: Nested())


def test_ctrl_c_while_waiting_for_another_threads_probe_stops_only_this_call():
    # The main thread waits for a worker's probe; Ctrl-C there is the main thread's
    # KeyboardInterrupt, at once, and the worker's probe runs to its answer (it used to be
    # asked to stop, while the main thread went on to run its whole probe).
    import threading

    started, go = threading.Event(), threading.Event()
    answers = {}

    class Held(LinearStep):
        def run(self, batch):
            started.set()
            go.wait(30)
            return super().run(batch)

    def worker():
        try:
            answers["worker"] = probe(Held).batch_size
        except BaseException as exc:  # recorded for the assertion below
            answers["worker"] = exc

    thread = threading.Thread(target=worker)
    thread.start()
    assert started.wait(30)
    timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            probe(lambda: LinearStep())
    finally:
        timer.cancel()
        go.set()
        thread.join(30)
    assert answers == {"worker": 90}
    assert probe(lambda: LinearStep()).batch_size == 90


def test_ctrl_c_in_a_log_handler_stops_the_probe():
    import logging

    class Interrupting(logging.Handler):
        def emit(self, record):
            if "trial 2" in record.getMessage():
                raise KeyboardInterrupt

    logger = logging.getLogger("batchfit")
    handler, level = Interrupting(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    steps = []
    try:
        with pytest.raises(KeyboardInterrupt):
            probe(lambda: steps.append(LinearStep()) or steps[-1])
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert steps and steps[0].released and len(steps[0].runs) <= 3


def test_crash_is_oom_needs_a_cap():
    # As --crash-is-oom without --enforce or --enforce-address-space: no cap to crash near.
    kw = dict(device="host", memory_budget="200MiB", max_batch_size=4, cgroups=False)
    with pytest.raises(batchfit.InvalidArgument, match=r"^crash_is_oom: .*neither is set"):
        batchfit.probe_command(["true"], crash_is_oom=True, **kw)
    # Under the virtual-memory cap a program that fits runs as before.
    result = batchfit.probe_command(["true"], crash_is_oom=True, enforce_address_space=True, **kw)
    assert result.batch_size == 4


def test_the_recovery_docstring_loop_trains_every_batch():
    # The docstring's loop as written: it went on to the next batch after an out of memory, so
    # the batch that ran out was never trained (a reviewer ran it: batch 2 missing).
    import textwrap
    lines = [line.strip()[4:] for line in batchfit.Recovery.__doc__.splitlines()
             if line.strip().startswith((">>> ", "... "))]
    code = textwrap.dedent("\n".join(lines)).replace(", fit=result", "")
    trained, failures = [], {2: 2, 4: 1}

    def train_step(batch, plan):
        if failures.get(batch):
            failures[batch] -= 1
            raise MemoryError("out of memory")
        trained.append((batch, plan.effective_batch))

    names = {"Recovery": batchfit.Recovery, "is_out_of_memory": batchfit.is_out_of_memory,
             "data": range(6), "train_step": train_step,
             "result": type("R", (), {"batch_size": 64})()}
    exec(code, names)
    assert [b for b, _ in trained] == list(range(6))
    assert all(effective == 256 for _, effective in trained)


def test_numbers_of_numpy_and_fractions_are_read_as_floats_are():
    np = pytest.importorskip("numpy")
    import fractions
    # np.float32(0.05) was written out as "0.05000000074505806" and refused as bytes that are
    # not whole; np.int64(0) as a spread, and np.float32(16.0) as a requested size, refused.
    base = probe(lambda: LinearStep(), memory_budget="150MiB", margin=0.05)
    for margin in (np.float32(0.05), fractions.Fraction(1, 20)):
        got = probe(lambda: LinearStep(), memory_budget="150MiB", margin=margin)
        assert got.budget["margin_bytes"] == pytest.approx(base.budget["margin_bytes"], rel=1e-6)
    assert probe(lambda: LinearStep(), peak_spread=np.int64(0)).budget["peak_spread"] == 0
    assert probe(lambda: LinearStep(), peak_spread=np.float32(0.05)).budget["peak_spread"] == \
        pytest.approx(0.05)
    assert batchfit.requested_batch_size({"max_batch_size": np.float32(16.0)}) == 16
    # A whole one is a whole number of bytes, as a float's is.
    for budget in (np.float32(150 * MIB), fractions.Fraction(150 * MIB),
                   decimal.Decimal("157286400.0")):
        assert probe(lambda: LinearStep(), memory_budget=budget).budget["usable_bytes"] == 150 * MIB
    with pytest.raises(batchfit.InvalidArgument, match="margin: 5 has no unit"):
        probe(lambda: LinearStep(), margin=np.int64(5))


def test_a_recovery_cannot_be_copied():
    # A shallow copy shared the C controller; each copy freed it (a double free at exit).
    import copy
    import pickle
    rec = batchfit.Recovery(global_batch=64, micro_batch=16)
    for make in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="cannot be copied"):
            make(rec)
    assert rec.out_of_memory().micro_batch == 8
    rec.close()


def test_probe_command_flags_and_names_are_checked():
    for flag in ("enforce", "enforce_address_space", "crash_is_oom", "watchdog", "show_output",
                 "cgroups"):
        for value in ("no", "0", 1, None):
            with pytest.raises(batchfit.InvalidArgument, match=f"^{flag}: expected True or False"):
                batchfit.probe_command(["true", "{batch}"], device="host",
                                       memory_budget="64MiB", max_batch_size=2, **{flag: value})
    for name in ("", True, b"m"):
        with pytest.raises(batchfit.InvalidArgument, match="name: expected a non-empty string"):
            probe(lambda: LinearStep(), cache=True, name=name)


def test_the_vram_limit_is_passed_on_as_the_text_that_was_read(tmp_path):
    import fractions
    try:
        batchfit.limit_cuda_memory(b"0.5")
        assert batchfit.resolve_vram_limit() == (512 * MIB, "limit_cuda_memory()")
        batchfit.limit_cuda_memory(fractions.Fraction(1, 4))
        assert batchfit.resolve_vram_limit() == (256 * MIB, "limit_cuda_memory()")
    finally:
        batchfit.limit_cuda_memory(None)
    seen = tmp_path / "seen"
    batchfit.probe_command(["sh", "-c", f'echo "$VRAM_LIMIT_GB" > {seen}', "{batch}"],
                           device="host", memory_budget="64MiB", max_batch_size=1,
                           vram_limit_gb=b"8")
    assert seen.read_text() == "8\n"


def test_enter_returning_none_is_named():
    exits = []

    class Forgot:
        def __enter__(self):
            pass

        def __exit__(self, *exc):
            exits.append(exc[0])

        def run(self, batch):
            pass

    with pytest.raises(TypeError, match="__enter__ returned NoneType None.*return self"):
        batchfit.measure_batch_size(Forgot, device=sim())
    assert exits == [TypeError]


def test_auto_on_the_host_says_so_in_the_result():
    result = batchfit.probe_batch_size(lambda b: None, device="auto", max_batch_size=2)
    if result.device["spec"] == "host":
        assert any("device auto uses the host's memory" in w for w in result.warnings)


def test_a_host_trial_far_over_the_budget_is_stopped_before_the_process_is_killed():
    # An estimate of 100000 on the host grew one trial to 24 GiB, and the kernel's
    # out-of-memory killer ended the caller's process. Each host trial is now watched: past a
    # quarter over the budget it raises TrialOverBudget in the trial and reads as out of memory.
    base = batchfit._core._self_rss()
    budget = base + 150 * MIB
    most = []

    class Growing:
        def run(self, batch):
            held = []
            for _ in range(batch):
                held.append(bytearray(MIB))
                if len(held) > 1024:  # without the guard: fail here, not on the machine
                    raise RuntimeError("runaway: the guard did not stop the trial")
            most.append(len(held))

        def release(self):
            pass

    result = batchfit.measure_batch_size(Growing, device="host", memory_budget=f"{budget}B",
                                         estimate=100000)
    failed = [t for t in result.trials if t.outcome == "oom"]
    assert failed and failed[0].batch == 100000
    assert failed[0].reason.startswith("TrialOverBudget: stopped at")
    for t in failed:  # stopped, or (just past the limit) finished over the budget
        assert t.reason.startswith("TrialOverBudget: stopped at") or t.over_budget
        assert budget < t.needed_bytes_at_least < budget * 1.25 + 64 * MIB
    # The answer fits under the budget, with the process's own memory in it.
    assert 0 < result.batch_size < 150
    assert result.batch_size in most
    assert all(t.peak_bytes <= budget for t in result.trials if t.outcome == "fits")
    # Nothing is left pending for the code after the probe.
    assert sum(len(bytearray(MIB)) for _ in range(200)) == 200 * MIB


def test_the_host_guard_keeps_stopping_a_trial_that_swallows_it():
    # A step that catches MemoryError per sample (a pipeline that skips what does not fit)
    # swallowed the guard's TrialOverBudget, a MemoryError then, and grew on (to 1.78 GiB of a
    # 100 MiB budget): it is a BaseException now, as KeyboardInterrupt is.
    assert not issubclass(batchfit.TrialOverBudget, Exception)
    assert batchfit.is_out_of_memory(batchfit.TrialOverBudget())
    with pytest.raises(TypeError, match="takes an exception"):
        batchfit.is_out_of_memory("CUDA out of memory")
    base = batchfit._core._self_rss()
    budget = base + 150 * MIB

    class Swallowing:
        def run(self, batch):
            held = []
            for _ in range(batch):
                try:
                    held.append(bytearray(MIB))
                except MemoryError:  # skip what does not fit, as often as it takes
                    continue
                except Exception:
                    continue
                if len(held) > 1024:
                    raise RuntimeError("runaway: the step swallowed the guard")

        def release(self):
            pass

    result = batchfit.measure_batch_size(Swallowing, device="host", memory_budget=f"{budget}B",
                                         estimate=3000)
    assert result.trials[0].outcome == "oom"
    assert result.trials[0].reason.startswith("TrialOverBudget: stopped at")
    assert 0 < result.batch_size < 150


def test_a_step_message_cut_to_the_field_ends_in_dots():
    # Cut at 255 bytes with no mark (the library's own messages end in "..." when cut).
    class Long(LinearStep):
        def run(self, batch):
            raise MemoryError("\u00e9" * 3000)

    with pytest.raises(batchfit.MinimumDoesNotFit) as info:
        probe(Long)
    reason = info.value.result.trials[0].reason
    assert reason.endswith("...") and reason.startswith("MemoryError: \u00e9")
    assert len(reason.encode()) <= 255
