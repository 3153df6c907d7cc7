"""A real PyTorch CPU model probed in-process, against the CLI's child-process probe of the
same model (examples/torch_train.py), and PyTorch's own out-of-memory errors. These tests need
torch: without it they fail (the import below), they are never skipped."""
import json
import os
import subprocess
import sys
import time

import pytest
import torch

import batchfit
from conftest import BUILD, ROOT

# Both sides measure the same way: the process's resident-set high-water mark (in-process:
# VmHWM reset before each trial; the CLI with --no-cgroup: wait4's ru_maxrss), with glibc's
# mmap threshold fixed so freed activations go back to the system in both.
ENV = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", OMP_NUM_THREADS="1",
           PYTHONPATH=str(ROOT / "python"))
MODELS = {
    "cnn": (["--model", "cnn", "--width", "16", "--image", "64", "--steps", "1"], "420MiB"),
    "transformer": (["--width", "32", "--layers", "2", "--seq", "64", "--vocab", "4000",
                     "--steps", "1"], "420MiB"),
}
TRAIN = str(ROOT / "examples" / "torch_train.py")


def run_timed(cmd):
    start = time.monotonic()
    proc = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
    seconds = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, seconds


def band_in_batches(*results):
    """How many batch sizes the measurement cannot tell apart: the spread the budget
    guards against plus the largest residual of either fit, over the smaller slope."""
    slope = min(r["fit"]["bytes_per_sample"] for r in results)
    noise = max(r["budget"]["peak_spread"] * r["budget"]["budget_bytes"] +
                r["fit"]["max_residual_bytes"] for r in results)
    return noise / slope


@pytest.mark.parametrize("model", sorted(MODELS))
def test_in_process_agrees_with_the_cli_and_is_faster(model, record_property):
    args, budget = MODELS[model]
    out, inproc_s = run_timed([sys.executable, str(ROOT / "python" / "tests" /
                                                   "torch_inprocess.py"), budget] + args)
    inproc = json.loads(out)
    _, cli_s = run_timed([str(BUILD / "batchfit"), "probe", "--device", "host",
                          "--memory-budget", budget, "--no-cache", "--no-cgroup", "--quiet",
                          "--export-json", "-", "--", sys.executable, TRAIN, "--quiet",
                          "--batch-size", "{batch}"] + args)
    cli = json.loads(_)
    a, b = inproc["result"]["batch_size"], cli["result"]["batch_size"]
    band = band_in_batches(inproc, cli)
    line = (f"{model}: in-process batch {a} in {len(inproc['trials'])} trials, {inproc_s:.1f} s; "
            f"CLI batch {b} in {len(cli['trials'])} trials, {cli_s:.1f} s; band +-{band:.1f}")
    print(line)
    record_property("comparison", line)
    with open(BUILD / f"python-compare-{model}.txt", "w") as f:
        f.write(line + "\n")
    assert a > 1 and b > 1
    assert abs(a - b) <= band, line
    assert inproc_s < cli_s, line
    # Both measured the same slope within the band's terms.
    sa, sb = inproc["fit"]["bytes_per_sample"], cli["fit"]["bytes_per_sample"]
    assert abs(sa - sb) / sb < 0.2, line


def test_real_cpu_allocator_failure_is_out_of_memory():
    with pytest.raises(RuntimeError) as info:
        torch.empty(2**62, dtype=torch.uint8)
    assert batchfit.is_out_of_memory(info.value)
    assert batchfit.is_out_of_memory(torch.cuda.OutOfMemoryError("CUDA out of memory"))
    assert not batchfit.is_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))


class HugeAt:
    """A torch step whose allocation explodes past a batch size: the CPU allocator refuses."""

    def __init__(self, limit):
        self.limit = limit
        self.weight = torch.nn.Linear(8, 8)

    def run(self, batch):
        x = torch.randn(batch, 8)
        if batch > self.limit:
            torch.empty(2**62, dtype=torch.uint8)
        self.weight(x).sum().backward()
        return batchfit.PeakBytes(1_000_000 + 1000 * batch)  # the step's own measurement

    def release(self):
        self.weight = None


def test_torch_oom_in_a_probe_and_a_real_shape_bug():
    result = batchfit.measure_batch_size(lambda: HugeAt(40), device="sim:capacity=1GiB",
                                         margin=0.0, peak_spread=0.0)
    assert result.batch_size == 40
    assert any(t.outcome == "oom" and "can't allocate memory" in t.reason for t in result.trials)

    class ShapeBug(HugeAt):
        def run(self, batch):
            return torch.nn.Linear(3, 3)(torch.randn(batch, 8))

    with pytest.raises(RuntimeError, match="shape|size"):
        batchfit.measure_batch_size(lambda: ShapeBug(40), device="sim:capacity=1GiB")


def test_training_loop_survives_an_injected_oom_at_the_same_effective_batch():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.randn(64 * 6, 16)
    target = data.sum(1, keepdim=True)
    rec = batchfit.Recovery(global_batch=64, micro_batch=64, grow_after=2)
    inject = {"step": 2, "done": False}
    effective = []
    for step in range(6):
        batch, y = data[step * 64:(step + 1) * 64], target[step * 64:(step + 1) * 64]
        while True:
            plan = rec.plan
            opt.zero_grad(set_to_none=True)
            try:
                seen, start = 0, 0
                for micro in plan.micro_batches():
                    if step == inject["step"] and not inject["done"]:
                        inject["done"] = True
                        torch.empty(2**62, dtype=torch.uint8)  # a real allocator failure
                    xb, yb = batch[start:start + micro], y[start:start + micro]
                    loss = torch.nn.functional.mse_loss(model(xb), yb, reduction="sum") / 64
                    loss.backward()
                    seen += micro
                    start += micro
                break
            except RuntimeError as exc:
                if not batchfit.is_out_of_memory(exc):
                    raise
                rec.out_of_memory()
        opt.step()
        effective.append(seen)
        rec.step_ok()
    assert effective == [64] * 6
    assert inject["done"]
    rec.close()
