#!/usr/bin/env python3
"""A small PyTorch trainer for batchfit: a GPT-style decoder on synthetic
tokens (or, with --model cnn, a small convolutional network on synthetic
images), AdamW, bf16 autocast on a GPU. The batch size comes from
--batch-size (or BATCHFIT_BATCH_SIZE); VRAM_LIMIT_GB caps the memory this
process may use, as batchfit passes it on. Running out of memory raises
PyTorch's own torch.OutOfMemoryError, which batchfit classifies.

    python3 examples/torch_train.py --batch-size 32 --steps 5

Under torchrun (WORLD_SIZE > 1) each process trains a DistributedDataParallel
replica on cuda:LOCAL_RANK (nccl), or on the CPU (gloo) without a GPU;
--batch-size is then the size per process, and only rank 0 prints:

    python3 -m torch.distributed.run --nproc_per_node 2 examples/torch_train.py --batch-size 32

The same model and step are importable (Trainer), so the Python package's
in-process probe can measure exactly what the CLI measures in a child:

    trainer = Trainer(parse_args(["--model", "cnn"]), torch.device("cpu"))
    batchfit.probe_batch_size(trainer.run, device="host", memory_budget="600MiB")
"""
import argparse
import os
import time

import torch
import torch.distributed
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x, mask):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class Decoder(nn.Module):
    def __init__(self, vocab, width, heads, layers, seq):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.zeros(seq, width))
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, tokens):
        seq = tokens.shape[1]
        mask = torch.triu(torch.full((seq, seq), float("-inf"), device=tokens.device), 1)
        x = self.embed(tokens) + self.pos[:seq]
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.norm(x))


class ConvNet(nn.Module):
    """A small CNN: two convolution stages, global pooling, a linear classifier."""

    def __init__(self, width, classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.classify = nn.Linear(2 * width, classes)

    def forward(self, images):
        return self.classify(self.features(images).flatten(1))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=int(os.environ.get("BATCHFIT_BATCH_SIZE", "0")))
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--model", choices=("decoder", "cnn"), default="decoder")
    parser.add_argument("--seq", type=int, default=512, help="decoder: tokens per sample")
    parser.add_argument("--width", type=int, default=1024, help="decoder width or CNN channels")
    parser.add_argument("--layers", type=int, default=8, help="decoder blocks")
    parser.add_argument("--vocab", type=int, default=32000, help="decoder vocabulary")
    parser.add_argument("--image", type=int, default=64, help="cnn: image side in pixels")
    parser.add_argument("--quiet", action="store_true", help="no per-step lines")
    return parser.parse_args(argv)


class Trainer:
    """The model, its optimizer and one training step at any batch size."""

    def __init__(self, args, device):
        torch.manual_seed(0)
        self.args, self.device = args, device
        if args.model == "cnn":
            self.model = ConvNet(args.width, 10).to(device)
        else:
            self.model = Decoder(args.vocab, args.width, max(1, args.width // 64), args.layers,
                                 args.seq).to(device)
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            self.model = nn.parallel.DistributedDataParallel(
                self.model, device_ids=[device.index] if device.type == "cuda" else None)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=3e-4)
        self.loss_fn = nn.CrossEntropyLoss()

    def step(self, batch_size):
        """One optimizer step on a synthetic batch; returns the loss."""
        args, device = self.args, self.device
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            if args.model == "cnn":
                images = torch.randn(batch_size, 3, args.image, args.image, device=device)
                labels = torch.randint(0, 10, (batch_size,), device=device)
                loss = self.loss_fn(self.model(images).float(), labels)
            else:
                tokens = torch.randint(0, args.vocab, (batch_size, args.seq + 1), device=device)
                logits = self.model(tokens[:, :-1])
                loss = self.loss_fn(logits.reshape(-1, args.vocab).float(),
                                    tokens[:, 1:].reshape(-1))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def run(self, batch_size, steps=None, report=None):
        """args.steps optimizer steps at batch_size (what one probe trial runs)."""
        steps = self.args.steps if steps is None else steps
        for step in range(steps):
            loss = self.step(batch_size)
            if report and (step == 0 or step + 1 == steps or (step + 1) % 50 == 0):
                report(f"step {step + 1} loss {loss:.4f}")


def start_processes():
    """Under torchrun (WORLD_SIZE > 1) joins the process group and returns this process's
    rank, the number of processes and its device: cuda:LOCAL_RANK with nccl, else the CPU
    with gloo. Alone, rank 0 of 1 on the first GPU or the CPU, as before torchrun."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1, torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if torch.cuda.is_available():
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        torch.distributed.init_process_group("nccl")
    else:
        device = torch.device("cpu")
        torch.distributed.init_process_group("gloo")
    return torch.distributed.get_rank(), world, device


def largest_on_any_rank(value, device):
    """The largest of every rank's value (a collective: every rank calls it)."""
    tensor = torch.tensor([value], dtype=torch.float64, device=device)
    torch.distributed.all_reduce(tensor, op=torch.distributed.ReduceOp.MAX)
    return tensor.item()


def main():
    args = parse_args()
    if args.batch_size <= 0:
        raise SystemExit("torch_train.py: --batch-size must be a positive integer (or set "
                         "BATCHFIT_BATCH_SIZE)")
    rank, world, device = start_processes()
    limit = os.environ.get("VRAM_LIMIT_GB")
    if limit and device.type == "cuda":
        total = torch.cuda.get_device_properties(device).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, float(limit) * 2**30 / total), device)
    trainer = Trainer(args, device)
    start = time.time()
    quiet = args.quiet or rank != 0
    trainer.run(args.batch_size, report=None if quiet else lambda line: print(line, flush=True))
    if device.type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.time() - start
    peak = torch.cuda.max_memory_reserved(device) if device.type == "cuda" else 0
    samples = args.steps * args.batch_size
    if world == 1:
        print(f"trained {args.steps} steps at batch size {args.batch_size}: {samples / elapsed:.1f} "
              f"samples/s, peak reserved {peak / 2**30:.2f} GiB", flush=True)
        return
    # The slowest rank sets the pace; the largest peak is the one that must fit.
    elapsed = largest_on_any_rank(elapsed, device)
    peak = largest_on_any_rank(peak, device)
    if rank == 0:
        print(f"trained {args.steps} steps at batch size {args.batch_size} per rank on {world} "
              f"ranks: {world * samples / elapsed:.1f} samples/s, peak reserved "
              f"{peak / 2**30:.2f} GiB on the largest rank", flush=True)
    # The model's collectives are freed, and every rank is done with the group, before any
    # rank leaves it: a gloo rank torn down after a peer exited can hang in its destructor.
    del trainer
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
