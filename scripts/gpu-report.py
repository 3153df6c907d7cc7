#!/usr/bin/env python3
"""Reads batchfit's JSON for scripts/gpu-check.sh (standard library only):

    gpu-report.py count INFO_JSON   how many GPUs --device cuda:all means (0 without one)
    gpu-report.py result PROBE_JSON trials, batch size and rounds of a probe
    gpu-report.py peaks PROBE_JSON  each GPU's peak at the answer against its own budget
"""
import json
import sys


def count(info):
    spec = info.get("cuda_all")
    return len(spec.split(":", 1)[1].split(",")) if spec else 0


def result(probe):
    r = probe["result"]
    return f"{r['trials']} {r['batch_size']} {r['rounds']}"


def gib(value):
    return "unknown" if value is None else f"{value / 2**30:.2f} GiB"


def peaks(probe):
    batch = probe["result"]["batch_size"]
    at_answer = [t for t in probe["trials"] if t["batch"] == batch and t["accepted"]]
    if not at_answer or "gpus" not in at_answer[-1]:
        return f"no trial at batch {batch} with per-GPU peaks"
    return "\n".join(f"{g['spec']}: peak at batch {batch} {gib(g['peak_bytes'])} of its budget "
                     f"{gib(g['budget_bytes'])}" for g in at_answer[-1]["gpus"])


def main():
    what, path = sys.argv[1], sys.argv[2]
    with open(path) as f:
        document = json.load(f)
    print({"count": count, "result": result, "peaks": peaks}[what](document))


if __name__ == "__main__":
    main()
