#!/usr/bin/env python3
"""Reference: the same byte-level transformer as tessel-train/tessel-infer in
Python PyTorch (Debian python3-torch), for the throughput comparison in
run.sh. Same architecture, init, optimizer (AdamW, two groups, clip 1.0),
LR schedule, manual causal attention and KV-cache decoding.
--precision bf16 makes the same casts as workers/gpt.cpp: the matrix products
(linear layers, attention, head) in bf16, layer norms, softmax, the residual
stream and the loss in fp32, fp32 parameters and AdamW state in training; for
generation the products' weights are cast to bf16 once, before decoding.
Prints one JSON line with tokens_per_s."""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# The dtype of the matrix products: float32, or bfloat16 with --precision bf16.
DTYPE = torch.float32


def linear(x, layer):
    """A linear layer computed in DTYPE (a no-op cast in fp32)."""
    bias = layer.bias.to(DTYPE) if layer.bias is not None else None
    return F.linear(x.to(DTYPE), layer.weight.to(DTYPE), bias)


class Attention(nn.Module):
    def __init__(self, dim, heads, context):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.heads, self.head_dim = heads, dim // heads
        self.register_buffer("future_mask", torch.ones(context, context, dtype=torch.bool).triu(1))

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q, k, v = linear(x, self.qkv).view(B, T, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        past = 0
        if cache is not None:
            if "k" in cache:
                past = cache["k"].size(2)
                k = torch.cat([cache["k"], k], 2)
                v = torch.cat([cache["v"], v], 2)
            cache["k"], cache["v"] = k, v
        total = past + T
        att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        if T > 1:
            att = att.masked_fill(self.future_mask[past:total, :total], float("-inf"))
        y = torch.matmul(torch.softmax(att, -1, dtype=torch.float32).to(DTYPE), v)
        return linear(y.transpose(1, 2).reshape(B, T, C), self.proj)


class Block(nn.Module):
    def __init__(self, dim, heads, context):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, context)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.fc_proj = nn.Linear(4 * dim, dim)

    def forward(self, x, cache=None):
        x = x + self.attn(self.ln1(x), cache)
        return x + linear(F.gelu(linear(self.ln2(x), self.fc)), self.fc_proj)


class Gpt(nn.Module):
    def __init__(self, layers, heads, dim, context, seed):
        super().__init__()
        self.context = context
        self.tok_emb = nn.Embedding(256, dim)
        self.pos_emb = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, context) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        gen = torch.Generator().manual_seed(seed)
        residual_std = 0.02 / math.sqrt(2 * layers)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if "ln" in name:
                    p.fill_(0.0 if name.endswith(".bias") else 1.0)
                elif name.endswith(".bias"):
                    p.zero_()
                else:
                    p.normal_(0.0, residual_std if "proj.weight" in name else 0.02, generator=gen)

    def forward(self, tokens, caches=None):
        past = caches[0]["k"].size(2) if caches and "k" in caches[0] else 0
        T = tokens.size(1)
        x = self.tok_emb(tokens) + self.pos_emb(torch.arange(past, past + T))
        for i, b in enumerate(self.blocks):
            x = b(x, caches[i] if caches is not None else None)
        return torch.matmul(self.ln_f(x).to(DTYPE), self.tok_emb.weight.to(DTYPE).t()).float()

    def cast_product_weights(self):
        """Inference in bf16: the weights of the products in DTYPE, once."""
        self.tok_emb.to(DTYPE)
        for b in self.blocks:
            for m in (b.attn.qkv, b.attn.proj, b.fc, b.fc_proj):
                m.to(DTYPE)


def lr_at(step, peak, warmup, total, min_ratio=0.1):
    if warmup > 0 and step < warmup:
        return peak * (step + 1) / warmup
    progress = min(max((step - warmup) / max(1, total - warmup), 0.0), 1.0)
    floor = peak * min_ratio
    return floor + (peak - floor) * 0.5 * (1 + math.cos(math.pi * progress))


def train(a, model):
    data = torch.frombuffer(bytearray(open(a.data, "rb").read()), dtype=torch.uint8).long()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(a.seed)
    warmup = min(100, a.steps // 10)
    model.train()
    t_start = None
    for step in range(a.steps):
        if step == a.skip:
            t_start = time.perf_counter()
        offs = torch.randint(0, data.numel() - a.context - 1, (a.batch_size,), generator=gen)
        rows = torch.stack([data[o:o + a.context + 1] for o in offs.tolist()])
        x, y = rows[:, :-1], rows[:, 1:]
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, 256), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a.lr, warmup, a.steps)
        opt.step()
    elapsed = time.perf_counter() - t_start
    tokens = (a.steps - a.skip) * a.batch_size * a.context
    return {"mode": "train", "tokens_per_s": tokens / elapsed, "final_loss": loss.item()}


@torch.inference_mode()
def generate(a, model):
    model.eval()
    model.cast_product_weights()
    prompt = list(b"This License applies to")
    total_tokens, total_s = 0, 0.0
    for _ in range(a.prompts):
        t0 = time.perf_counter()
        tokens = list(prompt)
        start = max(0, len(tokens) - model.context)
        caches = [dict() for _ in model.blocks]
        logits = model(torch.tensor([tokens[start:]]), caches)[0, -1]
        for i in range(a.new_tokens):
            tokens.append(int(torch.argmax(logits)))
            if i + 1 == a.new_tokens:
                break
            if len(tokens) - start > model.context:
                start = len(tokens) - model.context // 2
                caches = [dict() for _ in model.blocks]
                logits = model(torch.tensor([tokens[start:]]), caches)[0, -1]
            else:
                logits = model(torch.tensor([[tokens[-1]]]), caches)[0, -1]
        total_s += time.perf_counter() - t0
        total_tokens += a.new_tokens
    return {"mode": "generate", "tokens_per_s": total_tokens / total_s}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["train", "generate"], required=True)
    p.add_argument("--data")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--skip", type=int, default=5, help="warm-up steps not timed")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--prompts", type=int, default=3)
    p.add_argument("--new-tokens", type=int, default=256)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    a = p.parse_args()
    global DTYPE
    DTYPE = torch.bfloat16 if a.precision == "bf16" else torch.float32
    torch.set_num_threads(a.threads)
    model = Gpt(a.layers, a.heads, a.dim, a.context, a.seed)
    out = train(a, model) if a.mode == "train" else generate(a, model)
    out["torch"] = torch.__version__
    out["precision"] = a.precision
    print(json.dumps(out))


if __name__ == "__main__":
    main()
