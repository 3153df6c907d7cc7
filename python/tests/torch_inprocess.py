"""Probes examples/torch_train.py's model in this process (one interpreter, one torch import,
one model build for all trials) and prints the library's JSON: the in-process half of the
comparison with the CLI's child-process probe (test_torch.py). Usage:
    python3 torch_inprocess.py BUDGET TORCH_TRAIN_ARGS...
"""
import sys
from pathlib import Path

import torch

import batchfit

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import torch_train  # noqa: E402


class TorchStep:
    """The example's Trainer as a batchfit step: built once, released by the library."""

    def __init__(self, args):
        self.trainer = torch_train.Trainer(args, torch.device("cpu"))

    def run(self, batch):
        self.trainer.run(batch)

    def release(self):
        self.trainer = None


def main():
    budget, rest = sys.argv[1], sys.argv[2:]
    args = torch_train.parse_args(rest + ["--quiet"])
    result = batchfit.measure_batch_size(lambda: TorchStep(args), device="host",
                                         memory_budget=budget, no_device="error")
    print(result.to_json())


if __name__ == "__main__":
    main()
