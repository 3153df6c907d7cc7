"""scripts/gpu-report.py, which reads the JSON for scripts/gpu-check.sh's multi-GPU part, on
what batchfit writes for two fake 16 GiB GPUs (the test build's fake NVIDIA libraries)."""
import os
import subprocess
import sys

from conftest import BUILD, ROOT

REPORT = str(ROOT / "scripts" / "gpu-report.py")


def fake_env(tmp_path, gpus):
    return dict(os.environ, FAKE_GPUS=gpus, FAKE_STATE=str(tmp_path / "state"),
                BATCHFIT_CUDA_LIBRARY=str(BUILD / "fake" / "libcuda.so.1"),
                BATCHFIT_NVML_LIBRARY=str(BUILD / "fake" / "libnvidia-ml.so.1"))


def batchfit(env, *args):
    proc = subprocess.run([str(BUILD / "batchfit")] + list(args), env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def report(what, path):
    return subprocess.run([sys.executable, REPORT, what, str(path)], capture_output=True,
                          text=True, check=True).stdout.strip()


def test_gpu_report_reads_the_gpu_count_result_and_per_gpu_peaks(tmp_path):
    env = fake_env(tmp_path, "16GiB,16GiB,16GiB")
    (tmp_path / "info.json").write_text(batchfit(env, "info", "--json"))
    assert report("count", tmp_path / "info.json") == "3"
    (tmp_path / "host.json").write_text(batchfit(dict(os.environ, BATCHFIT_CUDA_LIBRARY="/none",
                                                      BATCHFIT_NVML_LIBRARY="/none"),
                                                 "info", "--json"))
    assert report("count", tmp_path / "host.json") == "0"

    probe = tmp_path / "probe.json"
    out = batchfit(env, "probe", "--device", "cuda:all", "--no-cache", "--quiet",
                   "--export-json", str(probe), "--", str(BUILD / "tests" / "childtool"),
                   "gpu-grow-each", "100,50,100", "1024")
    batch = out.strip().split("=")[1]
    trials, answer, rounds = report("result", probe).split()
    assert answer == batch and rounds == trials
    lines = report("peaks", probe).splitlines()
    assert [line.split(":")[0] + ":" + line.split(":")[1] for line in lines] == \
        ["cuda:0", "cuda:1", "cuda:2"]
    # cuda:1 grows half as fast as the others, so its peak is the smaller one.
    peaks = [float(line.split(f"batch {batch} ")[1].split(" GiB")[0]) for line in lines]
    assert peaks[1] < peaks[0] == peaks[2]
    assert all("of its budget 15.20 GiB" in line for line in lines)
