#!/usr/bin/env python3
"""A small PyTorch trainer for batchfit on a GPU: a GPT-style decoder on
synthetic tokens, AdamW, bf16 autocast. The batch size comes from
--batch-size (or BATCHFIT_BATCH_SIZE); VRAM_LIMIT_GB caps the memory this
process may use, as batchfit passes it on. Running out of memory raises
PyTorch's own torch.OutOfMemoryError, which batchfit classifies.

    python3 examples/torch_train.py --batch-size 32 --steps 5
"""
import argparse
import os
import time

import torch
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=int(os.environ.get("BATCHFIT_BATCH_SIZE", "0")))
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=32000)
    args = parser.parse_args()
    if args.batch_size <= 0:
        parser.error("--batch-size must be a positive integer (or set BATCHFIT_BATCH_SIZE)")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    limit = os.environ.get("VRAM_LIMIT_GB")
    if limit and device.type == "cuda":
        total = torch.cuda.get_device_properties(device).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, float(limit) * 2**30 / total), device)
    torch.manual_seed(0)
    model = Decoder(args.vocab, args.width, args.width // 64, args.layers, args.seq).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loss_fn = nn.CrossEntropyLoss()
    start = time.time()
    for step in range(args.steps):
        tokens = torch.randint(0, args.vocab, (args.batch_size, args.seq + 1), device=device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
            loss = loss_fn(logits.reshape(-1, args.vocab).float(), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step == 0 or step + 1 == args.steps or (step + 1) % 50 == 0:
            print(f"step {step + 1} loss {loss.item():.4f}", flush=True)
    if device.type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.time() - start
    peak = torch.cuda.max_memory_reserved(device) if device.type == "cuda" else 0
    samples = args.steps * args.batch_size
    print(f"trained {args.steps} steps at batch size {args.batch_size}: {samples / elapsed:.1f} "
          f"samples/s, peak reserved {peak / 2**30:.2f} GiB", flush=True)


if __name__ == "__main__":
    main()
