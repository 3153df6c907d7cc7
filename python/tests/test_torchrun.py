"""examples/torch_train.py as a 2-process torchrun job on the CPU (gloo), run directly and
probed by the CLI, whose host backend must count both ranks' memory. Skipped without torch or
without torch.distributed's gloo backend. About 30 s on 2 cores: every trial starts three
Python processes that import torch."""
import json
import os
import socket
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT

torch = pytest.importorskip("torch")
if not (torch.distributed.is_available() and torch.distributed.is_gloo_available()):
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from torch.distributed.elastic.multiprocessing.api import Std  # noqa: E402

TRAIN = str(ROOT / "examples" / "torch_train.py")
TINY = ["--width", "32", "--layers", "2", "--seq", "64", "--vocab", "4000", "--steps", "1"]
ENV = dict(os.environ, OMP_NUM_THREADS="1")
BUDGET = "3GiB"
LARGEST = 16


def free_port():
    """A port for this job's rendezvous, so it never meets another job's on the default one."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(nproc):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
           "--master_port", str(free_port()), "--monitor_interval", "0.1"]
    # Torch before 2.0 on Python 3.11 reads the default "--redirects 0" as None and fails
    # before starting a worker; a setting for a local rank that does not exist means the same.
    if Std.from_str("0") is None:
        cmd += ["--redirects", "9:0", "--tee", "9:0"]
    return cmd + [TRAIN] + TINY


def probe(nproc, *options):
    proc = subprocess.run([str(BUILD / "batchfit"), "probe", "--device", "host",
                           "--memory-budget", BUDGET, "--no-cache", "--timeout", "60",
                           "--quiet", "--export-json", "-"] + list(options) + ["--"] +
                          torchrun(nproc) + ["--batch-size", "{batch}"],
                          env=ENV, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_torchrun_job_runs_and_is_probed_with_both_ranks_counted():
    direct = subprocess.run(torchrun(2) + ["--batch-size", "4"], env=ENV, capture_output=True,
                            text=True, timeout=120)
    assert direct.returncode == 0, direct.stderr[-3000:]
    lines = direct.stdout.splitlines()
    assert sum(line.startswith("step 1 loss ") for line in lines) == 1, direct.stdout
    summary = [line for line in lines if line.startswith("trained ")]
    assert len(summary) == 1 and "batch size 4 per rank on 2 ranks" in summary[0], direct.stdout

    both = probe(2, "--max", str(LARGEST), "--max-trials", "3")
    result = both["result"]
    assert result["complete"] and result["exit_code"] == 0, result
    # 3 GiB holds three processes that import torch with room to spare at 16 samples a rank.
    assert result["batch_size"] == LARGEST, both["trials"]
    at_answer = [t for t in both["trials"] if t["batch"] == LARGEST and t["accepted"]]
    assert at_answer, both["trials"]

    # The same size in a 1-process job, measured the same way (one trial). A peak that counted
    # only one process of the 2-process job (the launcher or one rank) would be no larger.
    one = probe(1, "--min", str(LARGEST), "--max", str(LARGEST))
    [single] = one["trials"]
    assert single["batch"] == LARGEST and single["accepted"], single
    assert at_answer[0]["peak_source"] == single["peak_source"]
    assert at_answer[0]["peak_bytes"] > 1.25 * single["peak_bytes"], (at_answer, single)
