#!/usr/bin/env python3
"""gpu_measure.py: measure on one real GPU what ../shared/groundtruth lacks, for checking the
cost model (docs/measured-hopper.md says how the results were made and what they showed).

Runs on a machine with PyTorch and one CUDA GPU (the lent H100/H200 machines); protosim does not
need it. Writes to OUTDIR (default $OUT):
  gemm.csv       bf16 tensor-core GEMMs by shape and layout (fwd x@W^T, dgrad dY@W, wgrad dY^T@x),
                 and fp32 (TF32 off) squares: median ms over timed repetitions, inputs rotated
                 among buffer sets larger than L2
  attention.csv  scaled_dot_product_attention (flash and cuDNN backends), forward and
                 forward+backward, causal and not, GQA
  memops.csv     memory-bound ops (layernorm, rmsnorm, gelu, silu*mul, add, softmax, copy,
                 cross-entropy) forward and forward+backward
  steps.csv      whole single-GPU training steps (no NCCL): GPT and Llama-style models in eager
                 PyTorch, bf16 parameters (one row fp32 under autocast), FlashAttention-2 (one
                 row PyTorch's default SDPA backend), fused AdamW; forward, backward, optimizer
                 and step medians, peak memory
  trace_*.json.gz  PyTorch profiler traces (2 ProfilerSteps) of those steps
  log.txt        environment and progress

  fp8_gemm.csv   FP8 GEMMs (torch._scaled_mm, e4m3, per-tensor scales) for the forward model
                 shapes, with and without fast accumulation; bf16 -> fp8 cast, amax
  overlap.csv    a kernel's time beside a kernel that holds N SMs as NCCL's channels do (CuPy
                 RawKernel: copying HBM or spinning), baseline interleaved (needs cupy)
  fsdp2_steps.csv  one-GPU FSDP2 steps (world size 1), eager and compiled, with op-level
                 selective and full activation checkpointing; env FSDP_ROWS=a,b picks rows

Usage: python3 scripts/gpu_measure.py [OUTDIR] [--quick]
       [--only=gemms,attention,memops,steps,fp8_gemms,overlap,fsdp2]
"""
import csv
import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else os.environ["OUT"]
QUICK = "--quick" in sys.argv
T0 = time.time()
LOG = open(os.path.join(OUT, "log.txt"), "w")


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.write(s + "\n")
    LOG.flush()


def smi(q):
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=" + q, "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return "nvidia-smi failed: %s" % e


DEV = torch.device("cuda")
PROPS = torch.cuda.get_device_properties(0)
L2 = getattr(PROPS, "L2_cache_size", 50 << 20)
log("device", torch.cuda.get_device_name(0), "sms", PROPS.multi_processor_count, "mem",
    PROPS.total_memory, "l2", L2)
log("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn",
    torch.backends.cudnn.version())
log("smi", smi("name,driver_version,power.limit,clocks.sm,clocks.max.sm,clocks.mem,"
               "temperature.gpu"))
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def timed(fn, min_s=0.03, trials=3):
    """Median seconds per call of fn over `trials` timed batches after warm-up (CUDA events)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    fn()
    b.record()
    torch.cuda.synchronize()
    est = max(a.elapsed_time(b) * 1e-3, 1e-6)
    reps = int(min(max(min_s / est, 3), 2000))
    res = []
    for _ in range(trials):
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        torch.cuda.synchronize()
        res.append(a.elapsed_time(b) * 1e-3 / reps)
    res.sort()
    return res[len(res) // 2], reps


def nsets(nbytes):
    """Buffer sets to rotate among so the working set is at least 4x L2."""
    return int(min(32, max(1, math.ceil(4 * L2 / max(nbytes, 1)))))


def timed_rotating(make, nbytes, op):
    """Time op(*buffers), rotating among nsets(nbytes) buffer sets made by make() so that no
    set stays in L2; returns (seconds per call, calls timed, sets)."""
    sets = nsets(nbytes)
    bufs = [make() for _ in range(sets)]
    i = [0]

    def fn():
        op(*bufs[i[0] % sets])
        i[0] += 1

    t, reps = timed(fn)
    del bufs
    return t, reps, sets


# ---------------------------------------------------------------- GEMMs
def gemm_case(m, n, k, layout, dtype):
    """Time C[m,n] = A[m,k] B[k,n] stored as a training GEMM stores it. layout: fwd (x[m,k] @
    W[n,k]^T), dgrad (dY[m,k'] @ W[k',n]: A row-major, B row-major), wgrad (dY[k,m]^T @ x[k,n])."""
    es = torch.tensor([], dtype=dtype).element_size()

    def make():
        if layout == "fwd":
            A, B = torch.randn(m, k, device=DEV, dtype=dtype), torch.randn(n, k, device=DEV,
                                                                          dtype=dtype).t()
        elif layout == "dgrad":
            A, B = torch.randn(m, k, device=DEV, dtype=dtype), torch.randn(k, n, device=DEV,
                                                                          dtype=dtype)
        else:
            A, B = torch.randn(k, m, device=DEV, dtype=dtype).t(), torch.randn(k, n, device=DEV,
                                                                              dtype=dtype)
        return A, B, torch.empty(m, n, device=DEV, dtype=dtype)

    return timed_rotating(make, (m * k + k * n + m * n) * es,
                          lambda A, B, C: torch.mm(A, B, out=C))


# (model, layer, N, K) of y[T, N] = x[T, K] W^T: Megatron shapes per GPU
GEMM_LAYERS = [
    ("gpt3-1.3b", "qkv", 6144, 2048), ("gpt3-1.3b", "proj", 2048, 2048),
    ("gpt3-1.3b", "fc1", 8192, 2048), ("gpt3-1.3b", "fc2", 2048, 8192),
    ("gpt3-1.3b", "head", 50304, 2048),
    ("gpt3-6.7b", "qkv", 12288, 4096), ("gpt3-6.7b", "proj", 4096, 4096),
    ("gpt3-6.7b", "fc1", 16384, 4096), ("gpt3-6.7b", "fc2", 4096, 16384),
    ("gpt3-175b-tp8", "qkv", 4608, 12288), ("gpt3-175b-tp8", "proj", 12288, 1536),
    ("gpt3-175b-tp8", "fc1", 6144, 12288), ("gpt3-175b-tp8", "fc2", 12288, 6144),
    ("llama3-8b", "qkv", 6144, 4096), ("llama3-8b", "o", 4096, 4096),
    ("llama3-8b", "gate_up", 28672, 4096), ("llama3-8b", "down", 4096, 14336),
    ("llama3-8b", "head", 128256, 4096),
]


def gemms():
    rows = []
    tokens = [2048, 8192] if QUICK else [2048, 8192, 16384]
    layers = GEMM_LAYERS
    cases = []
    for T in tokens:
        for model, layer, n, k in layers:
            if layer == "head" and T > 8192:
                continue
            cases.append(("%s %s T%d" % (model, layer, T), T, n, k, "fwd"))
            cases.append(("%s %s T%d" % (model, layer, T), T, k, n, "dgrad"))
            cases.append(("%s %s T%d" % (model, layer, T), n, k, T, "wgrad"))
    for s in [256, 512, 1000, 1024, 1536, 2048, 3000, 4096, 6144, 8192, 12288, 16384]:
        cases.append(("square", s, s, s, "fwd"))
    for m, n, k in [(8192, 128, 8192), (8192, 256, 8192), (8192, 1000, 8192), (64, 8192, 8192),
                    (8192, 8192, 128), (8192, 8192, 512), (2048, 2048, 65536),
                    (128, 128, 128), (512, 512, 512), (4096, 4096, 64)]:
        cases.append(("skinny", m, n, k, "fwd"))
    budget = 60 if QUICK else 110
    t_start = time.time()
    for name, m, n, k, layout in cases:
        if time.time() - t_start > budget:
            log("gemm: budget spent, %d cases left out" % (len(cases) - len(rows)))
            break
        try:
            t, reps, sets = gemm_case(m, n, k, layout, torch.bfloat16)
            rows.append([name, layout, "bf16", m, n, k, "%.6g" % (t * 1e3), reps, sets,
                         "%.1f" % (2 * m * n * k / t / 1e12)])
        except Exception as e:  # noqa: BLE001
            rows.append([name, layout, "bf16", m, n, k, "error: %s" % str(e)[:80], 0, 0, ""])
    for s in [1024, 4096, 8192]:
        try:
            t, reps, sets = gemm_case(s, s, s, "fwd", torch.float32)
            rows.append(["square", "fwd", "fp32", s, s, s, "%.6g" % (t * 1e3), reps, sets,
                         "%.1f" % (2 * s ** 3 / t / 1e12)])
        except Exception as e:  # noqa: BLE001
            rows.append(["square", "fwd", "fp32", s, s, s, "error: %s" % str(e)[:80], 0, 0, ""])
    with open(os.path.join(OUT, "gemm.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "layout", "dtype", "M", "N", "K", "ms", "reps", "buffer_sets",
                    "tflops"])
        w.writerows(rows)
    log("gemm: %d rows, %.0f s" % (len(rows), time.time() - t_start))
    torch.cuda.empty_cache()


# ---------------------------------------------------------------- attention
def sdpa_backend(name):
    from torch.nn.attention import SDPBackend
    return {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}[name]


def attention():
    from torch.nn.attention import sdpa_kernel
    rows = []
    # (label, batch, q heads, kv heads, seq, head dim, causal)
    cases = [
        ("gpt3-1.3b b4", 4, 16, 16, 2048, 128, True),
        ("gpt3-1.3b b8", 8, 16, 16, 2048, 128, True),
        ("gpt3-6.7b b1 s4096", 1, 32, 32, 4096, 128, True),
        ("gpt3-175b-tp8 b1", 1, 12, 12, 2048, 128, True),
        ("llama3-8b b1 s8192", 1, 32, 8, 8192, 128, True),
        ("llama3-8b b2 s4096", 2, 32, 8, 4096, 128, True),
        ("llama3.2-1b b4", 4, 32, 8, 2048, 64, True),
        ("d64 b2 s4096", 2, 64, 64, 4096, 64, True),
        ("s16384 b1", 1, 16, 16, 16384, 128, True),
        ("bert-large b32 s512", 32, 16, 16, 512, 64, False),
        ("noncausal b4 s2048", 4, 16, 16, 2048, 128, False),
        ("s1024 b8", 8, 16, 16, 1024, 128, True),
    ]
    t_start = time.time()
    for backend in ["flash", "cudnn"]:
        for label, b, hq, hkv, s, d, causal in cases:
            if time.time() - t_start > (40 if QUICK else 70):
                log("attention: budget spent")
                break
            row = [label, backend, b, hq, hkv, s, d, int(causal)]
            try:
                q = torch.randn(b, hq, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
                k = torch.randn(b, hkv, s, d, device=DEV, dtype=torch.bfloat16,
                                requires_grad=True)
                v = torch.randn(b, hkv, s, d, device=DEV, dtype=torch.bfloat16,
                                requires_grad=True)
                gqa = hq != hkv
                with sdpa_kernel([sdpa_backend(backend)]):
                    def fwd():
                        with torch.no_grad():
                            F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                           enable_gqa=gqa)

                    def fwdbwd():
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                           enable_gqa=gqa)
                        o.backward(gog)

                    gog = torch.randn(b, hq, s, d, device=DEV, dtype=torch.bfloat16)
                    tf, _ = timed(fwd)
                    tfb, _ = timed(fwdbwd)
                row += ["%.6g" % (tf * 1e3), "%.6g" % (tfb * 1e3), "%.6g" % ((tfb - tf) * 1e3), ""]
                del q, k, v, gog
            except Exception as e:  # noqa: BLE001
                row += ["", "", "", str(e).replace("\n", " ")[:100]]
            rows.append(row)
    with open(os.path.join(OUT, "attention.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "backend", "batch", "heads", "kv_heads", "seq", "head_dim", "causal",
                    "fwd_ms", "fwd_bwd_ms", "bwd_ms", "error"])
        w.writerows(rows)
    log("attention: %d rows, %.0f s" % (len(rows), time.time() - t_start))
    torch.cuda.empty_cache()


# ---------------------------------------------------------------- memory-bound ops
def memops():
    rows = []
    t_start = time.time()
    for T, h in [(8192, 2048), (8192, 4096), (16384, 8192)]:
        x = torch.randn(T, h, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        y = torch.randn(T, h, device=DEV, dtype=torch.bfloat16)
        w = torch.ones(h, device=DEV, dtype=torch.float32, requires_grad=True)
        bb = torch.zeros(h, device=DEV, dtype=torch.float32, requires_grad=True)
        x2 = torch.randn(T, 2 * h, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        g = torch.randn(T, h, device=DEV, dtype=torch.bfloat16)
        ops = {
            "layernorm": lambda: F.layer_norm(x, (h,), w.bfloat16(), bb.bfloat16()),
            "rmsnorm": lambda: F.rms_norm(x, (h,), w.bfloat16()),
            "gelu": lambda: F.gelu(x),
            "gelu_tanh": lambda: F.gelu(x, approximate="tanh"),
            "silu_mul": lambda: (lambda a: F.silu(a[0]) * a[1])(x2.chunk(2, -1)),
            "add": lambda: x + y,
            "softmax": lambda: torch.softmax(x, -1),
            "copy": lambda: x.clone(),
        }
        for name, op in ops.items():
            try:
                def fwd():
                    with torch.no_grad():
                        op()

                def fb():
                    op().backward(g)

                tf, _ = timed(fwd, min_s=0.02)
                tfb = float("nan") if name == "copy" or name == "add" else timed(fb, min_s=0.02)[0]
                rows.append([name, T, h, "%.6g" % (tf * 1e3), "%.6g" % (tfb * 1e3)])
            except Exception as e:  # noqa: BLE001
                rows.append([name, T, h, "error: %s" % str(e)[:80], ""])
        del x, y, x2, g
    for T, V in [(8192, 50304), (8192, 128256)]:
        lg = torch.randn(T, V, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        tg = torch.randint(0, V, (T,), device=DEV)

        def ce():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return F.cross_entropy(lg, tg)

        def cef():
            with torch.no_grad():
                ce()

        def ceb():
            ce().backward()

        try:
            rows.append(["cross_entropy", T, V, "%.6g" % (timed(cef, 0.02)[0] * 1e3),
                         "%.6g" % (timed(ceb, 0.02)[0] * 1e3)])
        except Exception as e:  # noqa: BLE001
            rows.append(["cross_entropy", T, V, "error: %s" % str(e)[:80], ""])
        del lg
    with open(os.path.join(OUT, "memops.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["op", "rows", "cols", "fwd_ms", "fwd_bwd_ms"])
        wr.writerows(rows)
    log("memops: %d rows, %.0f s" % (len(rows), time.time() - t_start))
    torch.cuda.empty_cache()


# ---------------------------------------------------------------- training steps
class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, d = c["hidden"], c["hidden"] // c["heads"]
        self.c, self.d = c, d
        llama = c["family"] == "llama"
        self.n1 = nn.RMSNorm(h, eps=1e-5) if llama else nn.LayerNorm(h)
        self.n2 = nn.RMSNorm(h, eps=1e-5) if llama else nn.LayerNorm(h)
        self.split = c.get("split_proj", False)  # torchtitan's block: wq, wk, wv; w1, w3 apart
        if self.split:
            self.wq = nn.Linear(h, c["heads"] * d, bias=False)
            self.wk = nn.Linear(h, c["kv_heads"] * d, bias=False)
            self.wv = nn.Linear(h, c["kv_heads"] * d, bias=False)
            self.w1 = nn.Linear(h, c["ffn"], bias=False)
            self.w3 = nn.Linear(h, c["ffn"], bias=False)
        else:
            self.qkv = nn.Linear(h, (c["heads"] + 2 * c["kv_heads"]) * d, bias=not llama)
        self.o = nn.Linear(c["heads"] * d, h, bias=not llama)
        if self.split:
            pass
        elif llama:
            self.up = nn.Linear(h, 2 * c["ffn"], bias=False)
        else:
            self.up = nn.Linear(h, c["ffn"])
        self.down = nn.Linear(c["ffn"], h, bias=not llama)

    def forward(self, x, rope):
        b, s, _ = x.shape
        c, d = self.c, self.d
        if self.split:
            y = self.n1(x)
            q, k, v = self.wq(y), self.wk(y), self.wv(y)
        else:
            q, k, v = self.qkv(self.n1(x)).split(
                [c["heads"] * d, c["kv_heads"] * d, c["kv_heads"] * d], -1)
        q = q.view(b, s, c["heads"], d).transpose(1, 2)
        k = k.view(b, s, c["kv_heads"], d).transpose(1, 2)
        v = v.view(b, s, c["kv_heads"], d).transpose(1, 2)
        if rope is not None:  # HuggingFace-style rotate_half rotary, eager kernels
            cos, sin = rope

            def rot(t):
                t1, t2 = t[..., : d // 2], t[..., d // 2:]
                return torch.cat((-t2, t1), -1)

            q = q * cos + rot(q) * sin
            k = k * cos + rot(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           enable_gqa=c["heads"] != c["kv_heads"])
        x = x + self.o(a.transpose(1, 2).reshape(b, s, c["heads"] * d))
        y = self.n2(x)
        if self.split:
            y = F.silu(self.w1(y)) * self.w3(y)
        elif c["family"] == "llama":
            gate, up = self.up(y).chunk(2, -1)
            y = F.silu(gate) * up
        else:
            y = F.gelu(self.up(y))
        return x + self.down(y)


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.wte = nn.Embedding(c["vocab"], c["hidden"])
        self.wpe = nn.Embedding(c["seq"], c["hidden"]) if c["family"] == "gpt" else None
        self.blocks = nn.ModuleList([Block(c) for _ in range(c["layers"])])
        self.nf = nn.RMSNorm(c["hidden"], eps=1e-5) if c["family"] == "llama" else \
            nn.LayerNorm(c["hidden"])
        d = c["hidden"] // c["heads"]
        if c["family"] == "llama":
            inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
            f = torch.outer(torch.arange(c["seq"], dtype=torch.float32), inv)
            emb = torch.cat((f, f), -1)
            self.register_buffer("cos", emb.cos().to(torch.bfloat16), persistent=False)
            self.register_buffer("sin", emb.sin().to(torch.bfloat16), persistent=False)

    def forward(self, idx):
        x = self.wte(idx)
        if self.wpe is not None:
            x = x + self.wpe.weight[: idx.shape[1]]
        rope = (self.cos, self.sin) if self.wpe is None else None
        for blk in self.blocks:
            x = blk(x, rope)
        return F.linear(self.nf(x), self.wte.weight)  # tied head


STEP_MODELS = [
    # name, family, layers, hidden, heads, kv_heads, ffn, vocab, seq, micro-batch, trace
    dict(name="gpt-tiny", family="gpt", layers=2, hidden=1024, heads=16, kv_heads=16, ffn=4096,
         vocab=50304, seq=1024, batch=4, trace=True),
    dict(name="gpt3-1.3b", family="gpt", layers=24, hidden=2048, heads=16, kv_heads=16,
         ffn=8192, vocab=50304, seq=2048, batch=4, trace=True),
    dict(name="gpt3-1.3b-amp", family="gpt", layers=24, hidden=2048, heads=16, kv_heads=16,
         ffn=8192, vocab=50304, seq=2048, batch=4, trace=False, mode="amp"),
    dict(name="gpt3-1.3b-sdpa-default", family="gpt", layers=24, hidden=2048, heads=16,
         kv_heads=16, ffn=8192, vocab=50304, seq=2048, batch=4, trace=False, sdpa="default"),
    dict(name="gpt3-1.3b-b8", family="gpt", layers=24, hidden=2048, heads=16, kv_heads=16,
         ffn=8192, vocab=50304, seq=2048, batch=8, trace=False),
    dict(name="llama3.2-1b", family="llama", layers=16, hidden=2048, heads=32, kv_heads=8,
         ffn=8192, vocab=128256, seq=2048, batch=4, trace=True),
    dict(name="gpt-2.7b-s4096", family="gpt", layers=32, hidden=2560, heads=20, kv_heads=20,
         ffn=10240, vocab=50304, seq=4096, batch=2, trace=False),
]


def profile_steps(step, name):
    """OUT/trace_NAME.json.gz: a PyTorch profiler trace of 2 steps (after one skipped and one
    warm-up step)."""
    from torch.profiler import ProfilerActivity, profile, schedule
    path = os.path.join(OUT, "trace_%s.json" % name)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=2)) as prof:
        for _ in range(4):
            step()
            prof.step()
    torch.cuda.synchronize()
    prof.export_chrome_trace(path)
    with open(path, "rb") as fi, gzip.open(path + ".gz", "wb", 6) as fo:
        shutil.copyfileobj(fi, fo)
    os.remove(path)
    log("trace", path + ".gz", os.path.getsize(path + ".gz"))


def steps():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    rows = []
    t_start = time.time()
    for c in STEP_MODELS:
        if time.time() - t_start > (80 if QUICK else 170):
            log("steps: budget spent before", c["name"])
            break
        try:
            torch.manual_seed(0)
            with torch.device(DEV):
                model = Model(c)
            if c.get("mode", "bf16") == "bf16":
                model = model.to(torch.bfloat16)  # bf16 params, activations and Adam states
            nparam = sum(p.numel() for p in model.parameters())
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
            idx = torch.randint(0, c["vocab"], (c["batch"], c["seq"]), device=DEV)
            tgt = torch.randint(0, c["vocab"], (c["batch"], c["seq"]), device=DEV)
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]

            def step():
                ev[0].record()
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=c.get("mode") == "amp"):
                    logits = model(idx)
                    loss = F.cross_entropy(logits.view(-1, c["vocab"]), tgt.view(-1))
                ev[1].record()
                loss.backward()
                ev[2].record()
                opt.step()
                opt.zero_grad(set_to_none=True)
                ev[3].record()

            backends = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
            if c.get("sdpa") == "default":  # PyTorch's own choice (cuDNN on Hopper)
                backends = [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION,
                            SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
            with sdpa_kernel(backends):
                for _ in range(3):
                    step()
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                parts = []
                n = 4 if QUICK else 8
                for _ in range(n):
                    step()
                    torch.cuda.synchronize()
                    parts.append([ev[0].elapsed_time(ev[1]), ev[1].elapsed_time(ev[2]),
                                  ev[2].elapsed_time(ev[3]), ev[0].elapsed_time(ev[3])])
                peak = torch.cuda.max_memory_allocated()
                med = [sorted(p[i] for p in parts)[n // 2] for i in range(4)]
                mn = min(p[3] for p in parts)
                rows.append([c["name"], c.get("mode", "bf16"), c["family"], c["layers"], c["hidden"], c["heads"],
                             c["kv_heads"], c["ffn"], c["vocab"], c["seq"], c["batch"], nparam,
                             "%.4f" % med[0], "%.4f" % med[1], "%.4f" % med[2], "%.4f" % med[3],
                             "%.4f" % mn, "%.4f" % (peak / 2 ** 30), ""])
                log("step", c["name"], "params", nparam, "fwd/bwd/opt/step ms",
                    ["%.2f" % x for x in med], "peak GiB %.2f" % (peak / 2 ** 30))
                if c["trace"]:
                    profile_steps(step, c["name"])
            del model, opt
        except Exception as e:  # noqa: BLE001
            model = opt = None
            rows.append([c["name"], c.get("mode", "bf16"), c["family"], c["layers"], c["hidden"],
                         c["heads"], c["kv_heads"], c["ffn"], c["vocab"], c["seq"], c["batch"],
                         "", "", "",
                         "", "", "", "", str(e).replace("\n", " ")[:120]])
            log("step", c["name"], "failed:", e)
        torch.cuda.empty_cache()
    with open(os.path.join(OUT, "steps.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "mode", "family", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab",
                    "seq", "batch", "params", "fwd_ms", "bwd_ms", "opt_ms", "step_ms",
                    "step_min_ms", "peak_gib", "error"])
        w.writerows(rows)
    log("steps: %d rows, %.0f s" % (len(rows), time.time() - t_start))


# ---------------------------------------------------------------- FP8 GEMMs
def fp8_gemms():
    """torch._scaled_mm (e4m3 x e4m3 -> bf16, per-tensor scales, the TN layout the FP8 tensor
    cores take) for the forward shapes of gemms(), with and without fast accumulation, and the
    bf16 -> fp8 cast and amax of an activation."""
    rows = []
    t_start = time.time()
    f8 = torch.float8_e4m3fn
    one = torch.ones((), device=DEV, dtype=torch.float32)
    shapes = [("gpt3-1.3b qkv", 6144, 2048), ("gpt3-1.3b fc1", 8192, 2048),
              ("gpt3-1.3b fc2", 2048, 8192), ("gpt3-6.7b qkv", 12288, 4096),
              ("gpt3-6.7b fc1", 16384, 4096), ("gpt3-6.7b fc2", 4096, 16384),
              ("gpt3-175b-tp8 qkv", 4608, 12288), ("gpt3-175b-tp8 fc1", 6144, 12288),
              ("gpt3-175b-tp8 fc2", 12288, 6144), ("llama3-8b gate_up", 28672, 4096),
              ("llama3-8b down", 4096, 14336), ("llama2-70b-tp4 fc1", 14336, 8192),
              ("square 8192", 8192, 8192)]
    for T in [2048, 8192, 16384]:
        for name, n, k in shapes:
            for fast in (True, False):
                if time.time() - t_start > 60:
                    break
                try:
                    t, reps, sets = timed_rotating(
                        lambda: (torch.randn(T, k, device=DEV).to(f8),
                                 torch.randn(n, k, device=DEV).to(f8).t()),
                        T * k + n * k + 2 * T * n,  # bytes: fp8 inputs, a bf16 output
                        lambda a, b: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                                      out_dtype=torch.bfloat16,
                                                      use_fast_accum=fast))
                    rows.append(["%s T%d" % (name, T), "fp8", int(fast), T, n, k,
                                 "%.6g" % (t * 1e3), reps, sets, "%.1f" % (2 * T * n * k / t / 1e12)])
                except Exception as e:  # noqa: BLE001
                    rows.append(["%s T%d" % (name, T), "fp8", int(fast), T, n, k,
                                 "error: %s" % str(e)[:80], 0, 0, ""])
    for T, h in [(8192, 4096), (16384, 8192)]:
        x = torch.randn(T, h, device=DEV, dtype=torch.bfloat16)
        for name, op in (("cast", lambda: x.to(f8)),
                         ("scale_cast", lambda: (x * 2.0).to(f8)),
                         ("amax", lambda: x.abs().max()),
                         ("cast_transpose", lambda: x.t().contiguous().to(f8))):
            t, reps = timed(op, min_s=0.02)
            rows.append([name, "bf16->fp8", 0, T, h, 0, "%.6g" % (t * 1e3), reps, 1, ""])
    with open(os.path.join(OUT, "fp8_gemm.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "dtype", "fast_accum", "M", "N", "K", "ms", "reps", "buffer_sets",
                    "tflops"])
        w.writerows(rows)
    log("fp8: %d rows, %.0f s" % (len(rows), time.time() - t_start))
    torch.cuda.empty_cache()


# ---------------------------------------------------------------- compute beside an SM-holding kernel
SIDE_SRC = r"""
extern "C" __global__ void side_kernel(float4* buf, long long per_block, long long dur_ns,
                                       int mode, unsigned int sleep_ns,
                                       unsigned long long* moved) {
    extern __shared__ float4 pad[];
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    float4* src = buf + (long long)blockIdx.x * per_block * 2;
    float4* dst = src + per_block;
    unsigned long long bytes = 0;
    long long off = 0;
    const long long chunk = (long long)blockDim.x * 8;
    float acc = (float)threadIdx.x;
    pad[threadIdx.x % 64] = make_float4(acc, acc, acc, acc);
    for (;;) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if ((long long)(t - t0) >= dur_ns) break;
        if (mode == 1) {
#pragma unroll
            for (int j = 0; j < 8; j++) {
                long long i = off + (long long)j * blockDim.x + threadIdx.x;
                dst[i] = src[i];
            }
            bytes += 8 * 32;
            off += chunk;
            if (off + chunk > per_block) off = 0;
            if (sleep_ns) __nanosleep(sleep_ns);
        } else {
            for (int j = 0; j < 256; j++) acc = acc * 0.9999f + 1.0f;
        }
    }
    if (acc == -1.0f) buf[0].x = pad[1].x;
    atomicAdd(moved, bytes);
}
"""


def kernel_info(fn):
    """Name, grid, block, registers and shared memory of the CUDA kernels one call of fn
    launches, from a PyTorch profiler trace."""
    from torch.profiler import ProfilerActivity, profile
    import tempfile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fn()
        torch.cuda.synchronize()
    path = tempfile.mktemp(suffix=".json")
    p.export_chrome_trace(path)
    ev = json.load(open(path))["traceEvents"]
    os.remove(path)
    out = []
    for e in ev:
        if e.get("cat") == "kernel":
            a = e.get("args", {})
            out.append("%s grid=%s block=%s regs=%s smem=%s" % (
                e["name"][:90], a.get("grid"), a.get("block"), a.get("registers per thread"),
                a.get("shared memory")))
    return " | ".join(out)


def overlap():
    """A kernel's time beside a kernel that holds N SMs, as NCCL's channels do: 'spin' holds
    the SMs and no memory bandwidth, 'copy' copies HBM to HBM on them (unthrottled, or
    throttled by __nanosleep to about what NCCL moves over NVLink). The side kernel reserves
    120 KB of shared memory per block ('excl': one block per SM, nothing else fits beside it)
    or 1 KB ('light'). It is launched first and runs for a fixed time longer than the timed
    calls; a second row set launches it after the kernel ('after') and reports how long it
    waited for SMs."""
    import cupy
    import numpy as np
    rows = []
    t_start = time.time()
    sms = PROPS.multi_processor_count
    kern = cupy.RawKernel(SIDE_SRC, "side_kernel")
    excl_smem = 120 * 1024
    try:
        kern.max_dynamic_shared_size_bytes = excl_smem
    except Exception as e:  # noqa: BLE001
        log("overlap: cannot reserve shared memory:", e)
        excl_smem = 0
    side_stream = torch.cuda.Stream()
    cp_side = cupy.cuda.ExternalStream(side_stream.cuda_stream)
    nbuf = 1 << 28  # floats: 1 GiB
    buf = torch.zeros(nbuf, device=DEV, dtype=torch.float32)
    moved = torch.zeros(1, device=DEV, dtype=torch.int64)
    buf_cp, moved_cp = cupy.asarray(buf), cupy.asarray(moved)
    f4 = nbuf // 4

    def launch(n, mode, sleep_ns, smem, dur_s):
        per = (f4 // (2 * n)) // 4096 * 4096
        with cp_side:
            kern((n,), (512,), (buf_cp, np.int64(per), np.int64(int(dur_s * 1e9)),
                                np.int32(mode), np.uint32(sleep_ns), moved_cp),
                 shared_mem=smem)

    def side_alone(n, mode, sleep_ns, smem, dur_s=0.02):
        moved.zero_()
        torch.cuda.synchronize()
        s0, s1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s0.record(side_stream)
        launch(n, mode, sleep_ns, smem, dur_s)
        s1.record(side_stream)
        torch.cuda.synchronize()
        return moved.item() / (s0.elapsed_time(s1) * 1e-3)  # bytes/s, read + write

    # throttle calibration: the sleep that brings 16 or 32 copying blocks to a target rate
    side_alone(16, 1, 0, excl_smem, 0.005)
    calib = {}
    for n in (16, 32):
        for sl in (0, 500, 1000, 2000, 4000, 8000, 16000):
            calib[(n, sl)] = side_alone(n, 1, sl, excl_smem)
            rows.append(["calibrate", "copy", n, sl, "excl", "", "", "", "",
                         "%.1f" % (calib[(n, sl)] / 1e9), "", "", ""])
    log("overlap: copy GB/s (read+write) by blocks, sleep ns:",
        {k: round(v / 1e9) for k, v in calib.items()})

    def throttle(n, target):
        return min((sl for (m, sl) in calib if m == n), key=lambda sl: abs(calib[(n, sl)] - target))

    configs = [("none", 0, 0, 0, "excl")]
    for n in (8, 16, 32, 66):
        configs.append(("spin", n, 0, 0, "excl"))
    configs.append(("spin", 16, 0, 0, "light"))
    for n in (8, 16, 32):
        configs.append(("copy", n, 0, 0, "excl"))
    for n in (16, 32):
        for target in (0.45e12, 0.9e12):
            configs.append(("copy", n, 0, throttle(n, target), "excl"))
    a = torch.randn
    bf = torch.bfloat16
    t_ = {}

    def mk_mm(m, n, k):
        A, B = a(m, k, device=DEV, dtype=bf), a(n, k, device=DEV, dtype=bf).t()
        C = torch.empty(m, n, device=DEV, dtype=bf)
        t_[(m, n, k)] = (A, B, C)
        return lambda: torch.mm(A, B, out=C)

    xa, ya = a(1 << 26, device=DEV, dtype=bf), a(1 << 26, device=DEV, dtype=bf)
    za = torch.empty_like(xa)
    xl = a(16384, 4096, device=DEV, dtype=bf)
    wl, bl = torch.ones(4096, device=DEV, dtype=bf), torch.zeros(4096, device=DEV, dtype=bf)
    q = a(4, 16, 4096, 128, device=DEV, dtype=bf)
    ops = [
        ("gemm 8192x8192x8192", mk_mm(8192, 8192, 8192), 2 * 8192 ** 3, 3 * 2 * 8192 ** 2),
        ("gemm fc1 8192x8192x2048", mk_mm(8192, 8192, 2048), 2 * 8192 * 8192 * 2048,
         2 * (8192 * 2048 * 2 + 8192 * 8192)),
        ("gemm down 8192x4096x14336", mk_mm(8192, 4096, 14336), 2 * 8192 * 4096 * 14336,
         2 * (8192 * 14336 + 4096 * 14336 + 8192 * 4096)),
        ("gemm proj 4096x2048x2048", mk_mm(4096, 2048, 2048), 2 * 4096 * 2048 * 2048,
         2 * (4096 * 2048 * 2 + 2048 * 2048)),
        ("gemm 2048x2048x2048", mk_mm(2048, 2048, 2048), 2 * 2048 ** 3, 3 * 2 * 2048 ** 2),
        ("add 64M bf16", lambda: torch.add(xa, ya, out=za), 0, 3 * 2 * (1 << 26)),
        ("layernorm 16384x4096", lambda: F.layer_norm(xl, (4096,), wl, bl), 0,
         2 * 2 * 16384 * 4096),
        ("sdpa fwd b4 h16 s4096 d128 causal",
         lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True),
         4 * 16 * 4096 * 4096 * 128 * 2, 4 * 2 * 4 * 16 * 4096 * 128),
    ]
    # the forward GEMM shapes of gemms() at 2,048 and 8,192 tokens, and squares: a sweep beside
    # 16 and 32 copying blocks and 32 spinning ones
    for T in (2048, 8192):
        for model, layer, n, k in GEMM_LAYERS:
            ops.append(("sweep %s %s T%d" % (model, layer, T), mk_mm(T, n, k), 2 * T * n * k, 0))
    for sq in (1024, 2048, 4096, 12288, 16384):
        ops.append(("sweep square %d" % sq, mk_mm(sq, sq, sq), 2 * sq ** 3, 0))
    sweep_configs = [("copy", 16, 0, 0, "excl"), ("copy", 32, 0, 0, "excl"),
                     ("spin", 32, 0, 0, "excl")]
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]

    def trial(fn, reps, kind, n, sleep_ns, smem, dur):
        moved.zero_()
        torch.cuda.synchronize()
        if kind != "none":
            ev[2].record(side_stream)
            launch(n, 1 if kind == "copy" else 0, sleep_ns, smem, dur)
            ev[3].record(side_stream)
        torch.cuda._sleep(200000)  # ~0.1 ms: the side blocks take their SMs
        ev[0].record()
        for _ in range(reps):
            fn()
        ev[1].record()
        torch.cuda.synchronize()
        t = ev[0].elapsed_time(ev[1]) * 1e-3 / reps
        if kind == "none":
            return t, "", "", 0
        return (t, "%d" % (ev[0].elapsed_time(ev[3]) >= ev[0].elapsed_time(ev[1])),
                "%.3f" % ev[2].elapsed_time(ev[3]), moved.item())

    def clock():
        try:
            return "%d MHz %.0f W" % (torch.cuda.clock_rate(), torch.cuda.power_draw() / 1e3)
        except Exception:  # noqa: BLE001
            return ""

    for name, fn, flops, nbytes in ops:
        if time.time() - t_start > (60 if QUICK else 150):
            log("overlap: budget spent before", name)
            break
        sweep = name.startswith("sweep")
        try:
            info = kernel_info(fn)
            t_alone, _ = timed(fn, min_s=0.02)
            reps = int(max(3, (0.012 if sweep else 0.02) / t_alone))
            dur = reps * t_alone * 2.5 + 0.001
            for kind, n, _unused, sleep_ns, smem_kind in (sweep_configs if sweep else configs[1:]):
                smem = excl_smem if smem_kind == "excl" else 1024
                base, res = [], []
                for _ in range(3):  # interleaved, so that clock and power drift cancel
                    base.append(trial(fn, reps, "none", 0, 0, 0, 0)[0])
                    res.append(trial(fn, reps, kind, n, sleep_ns, smem, dur))
                base.sort()
                res.sort()
                t_none = base[1]
                t_ov, covered, side_ms, mv = res[1]
                bw = "" if kind != "copy" or sweep else "%.1f" % (
                    side_alone(n, 1, sleep_ns, smem, 0.01) / 1e9)
                rows.append([name, kind, n, sleep_ns, smem_kind, "%.6g" % (t_alone * 1e3),
                             "%.6g" % (t_none * 1e3), "%.6g" % (t_ov * 1e3),
                             "%.4f" % (t_ov / t_none - 1), covered, bw, side_ms,
                             "%.4g" % (mv / 1e9) if kind == "copy" else "", clock(), info])
            # launched after: how long the side kernel waits for SMs behind this kernel
            if name.startswith("gemm 8192x8192x8192") or name.startswith("gemm fc1"):
                for n in (16, 32):
                    torch.cuda.synchronize()
                    ev[0].record()
                    for _ in range(reps):
                        fn()
                    ev[1].record()
                    ev[2].record(side_stream)
                    launch(n, 1, 0, excl_smem, 0.002)
                    ev[3].record(side_stream)
                    torch.cuda.synchronize()
                    rows.append([name, "copy-after", n, 0, "excl", "%.6g" % (t_alone * 1e3), "",
                                 "%.6g" % (ev[0].elapsed_time(ev[1]) / reps), "", "", "",
                                 "%.3f" % ev[2].elapsed_time(ev[3]), "", clock(),
                                 "side waited %.3f ms beyond its 2 ms" % (
                                     ev[2].elapsed_time(ev[3]) - 2.0)])
            log("overlap:", name, "alone %.4f ms" % (t_alone * 1e3),
                " ".join("%s%d/%d:%s" % (r[1], r[2], r[3], r[8]) for r in rows
                         if r[0] == name and r[1] in ("spin", "copy")))
        except Exception as e:  # noqa: BLE001
            rows.append([name, "error", "", "", "", "", "", "", "", "", "", "", "", "",
                         str(e).replace("\n", " ")[:150]])
            log("overlap:", name, "failed:", repr(e))
        with open(os.path.join(OUT, "overlap.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["op", "side", "side_blocks", "sleep_ns", "side_smem", "alone_ms",
                        "none_ms", "beside_ms", "slowdown", "side_covered", "side_alone_gbs",
                        "side_ms", "side_moved_gb", "clock_power", "kernels"])
            w.writerows(rows)
    del buf, t_
    torch.cuda.empty_cache()
    log("overlap: %d rows, %.0f s" % (len(rows), time.time() - t_start))


# ---------------------------------------------------------------- FSDP2 on one GPU
GPT13 = dict(name="gpt3-1.3b", family="gpt", layers=24, hidden=2048, heads=16, kv_heads=16,
             ffn=8192, vocab=50304, seq=2048, batch=4)
LLAMA3B = dict(name="llama3.2-3b", family="llama", layers=28, hidden=3072, heads=24, kv_heads=8,
               ffn=8192, vocab=128256, seq=8192, batch=1)
LLAMA3B_TITAN = dict(LLAMA3B, name="llama3.2-3b-titan", split_proj=True)
FSDP_ROWS = [
    # row, model, fsdp, compile, reshard_after_forward, activation checkpointing
    ("plain-bf16", GPT13, False, False, True, "none"),
    ("fsdp2-eager", GPT13, True, False, True, "none"),
    ("fsdp2-eager-noreshard", GPT13, True, False, False, "none"),
    ("plain-bf16-compiled", GPT13, False, True, True, "none"),
    ("fsdp2-compiled", GPT13, True, True, True, "none"),
    ("llama3b-plain-bf16", LLAMA3B, False, False, True, "none"),
    ("llama3b-fsdp2-eager", LLAMA3B, True, False, True, "none"),
    ("llama3b-fsdp2-eager-sac-op", LLAMA3B, True, False, True, "op"),
    ("llama3b-fsdp2-eager-full-ac", LLAMA3B, True, False, True, "full"),
    ("llama3b-fsdp2-compiled", LLAMA3B, True, True, True, "none"),
    ("llama3b-fsdp2-compiled-sac-op", LLAMA3B, True, True, True, "op"),
    # torchtitan's block layout (separate wq, wk, wv and w1, w3): what `recompute: op` models
    ("titan3b-plain-bf16", LLAMA3B_TITAN, False, False, True, "none"),
    ("titan3b-plain-bf16-sac-op", LLAMA3B_TITAN, False, False, True, "op"),
    ("titan3b-plain-bf16-full-ac", LLAMA3B_TITAN, False, False, True, "full"),
    ("titan3b-fsdp2-eager", LLAMA3B_TITAN, True, False, True, "none"),
    ("titan3b-fsdp2-eager-sac-op", LLAMA3B_TITAN, True, False, True, "op"),
]


class Checkpointed(nn.Module):
    """A block under activation checkpointing: 'full' recomputes the whole block in backward;
    'op' is op-level selective checkpointing as torchtitan describes it (the outputs of
    attention and of every other matmul saved, the rest recomputed)."""

    def __init__(self, blk, mode):
        super().__init__()
        self.blk, self.mode = blk, mode

    def forward(self, x, rope):
        from torch.utils.checkpoint import checkpoint
        if self.mode == "full":
            return checkpoint(self.blk, x, rope, use_reentrant=False)
        from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
        aten = torch.ops.aten
        save = {aten.mm.default, aten._scaled_dot_product_flash_attention.default,
                aten._scaled_dot_product_efficient_attention.default,
                aten._scaled_dot_product_cudnn_attention.default, aten.max.default}

        def context():
            count = {"forward": 0, "recompute": 0}

            def policy(ctx, op, *args, **kwargs):
                phase = "recompute" if ctx.is_recompute else "forward"
                if op == aten.mm.default:
                    count[phase] += 1
                    if count[phase] % 2 == 0:
                        return CheckpointPolicy.PREFER_RECOMPUTE
                return CheckpointPolicy.MUST_SAVE if op in save else \
                    CheckpointPolicy.PREFER_RECOMPUTE

            return create_selective_checkpoint_contexts(policy)

        return checkpoint(self.blk, x, rope, use_reentrant=False, context_fn=context)


def fsdp2():
    """GPT-3 1.3B (the steps() model, micro-batch 4, 2,048 tokens) on one GPU: plain eager bf16
    parameters, and as torchtitan runs it: FSDP2 (fully_shard per block and at the root,
    world size 1 so its copy-in/copy-out, all-gather and reduce-scatter kernels and hooks run),
    fp32 parameters with bf16 compute and fp32 gradient reduction, fp32 loss; eager and with
    each block compiled (torch.compile, fullgraph) before sharding, as torchtitan does."""
    import torch.distributed as dist
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.nn.attention import SDPBackend, sdpa_kernel
    rows = []
    t_start = time.time()
    init = "/tmp/pg_init_%d" % os.getpid()
    dist.init_process_group("nccl", init_method="file://" + init, rank=0, world_size=1)
    header = ["row", "model", "seq", "batch", "ac", "fsdp", "compiled", "reshard_after_forward", "params", "fwd_ms", "bwd_ms",
              "opt_ms", "step_ms", "step_min_ms", "peak_gib", "compile_s", "error"]
    only = os.environ.get("FSDP_ROWS")
    for name, c, use_fsdp, use_compile, reshard, ac in FSDP_ROWS:
        if only and name not in only.split(","):
            continue
        if time.time() - t_start > (120 if QUICK else 240):
            log("fsdp2: budget spent before", name)
            break
        model = opt = None
        t_build = time.time()
        try:
            torch.manual_seed(0)
            with torch.device(DEV):
                model = Model(c)
            if not use_fsdp:
                model = model.to(torch.bfloat16)
            if ac != "none":
                for i, blk in enumerate(model.blocks):
                    model.blocks[i] = Checkpointed(blk, ac)
            if use_compile:
                for i, blk in enumerate(model.blocks):
                    model.blocks[i] = torch.compile(blk, fullgraph=True)
            if use_fsdp:
                mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
                for blk in model.blocks:
                    fully_shard(blk, mp_policy=mp, reshard_after_forward=reshard)
                fully_shard(model, mp_policy=mp, reshard_after_forward=reshard)
            nparam = sum(p.numel() for p in model.parameters())
            try:
                opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
            except Exception:  # noqa: BLE001
                opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
            idx = torch.randint(0, c["vocab"], (c["batch"], c["seq"]), device=DEV)
            tgt = torch.randint(0, c["vocab"], (c["batch"], c["seq"]), device=DEV)
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]

            def step():
                ev[0].record()
                logits = model(idx)
                if use_fsdp:
                    logits = logits.float()
                loss = F.cross_entropy(logits.view(-1, c["vocab"]), tgt.view(-1))
                ev[1].record()
                loss.backward()
                ev[2].record()
                opt.step()
                opt.zero_grad(set_to_none=True)
                ev[3].record()

            with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
                for _ in range(3):
                    step()
                torch.cuda.synchronize()
                compile_s = time.time() - t_build
                torch.cuda.reset_peak_memory_stats()
                parts = []
                for _ in range(8):
                    step()
                    torch.cuda.synchronize()
                    parts.append([ev[0].elapsed_time(ev[1]), ev[1].elapsed_time(ev[2]),
                                  ev[2].elapsed_time(ev[3]), ev[0].elapsed_time(ev[3])])
                peak = torch.cuda.max_memory_allocated()
                med = [sorted(p[i] for p in parts)[4] for i in range(4)]
                rows.append([name, c["name"], c["seq"], c["batch"], ac, int(use_fsdp),
                             int(use_compile), int(reshard), nparam]
                            + ["%.4f" % x for x in med]
                            + ["%.4f" % min(p[3] for p in parts), "%.4f" % (peak / 2 ** 30),
                               "%.1f" % compile_s, ""])
                log("fsdp2:", name, "fwd/bwd/opt/step ms", ["%.2f" % x for x in med],
                    "peak GiB %.2f" % (peak / 2 ** 30), "build+warm-up %.0f s" % compile_s)
                if name in ("fsdp2-eager", "fsdp2-compiled", "titan3b-plain-bf16-sac-op"):
                    profile_steps(step, name)
        except Exception as e:  # noqa: BLE001
            rows.append([name, c["name"], c["seq"], c["batch"], ac, int(use_fsdp),
                         int(use_compile), int(reshard), "", "", "", "",
                         "", "", "", "", str(e).replace("\n", " ")[:150]])
            log("fsdp2:", name, "failed:", repr(e)[:400])
        del model, opt
        torch.cuda.empty_cache()
        with open(os.path.join(OUT, "fsdp2_steps.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)
    dist.destroy_process_group()
    log("fsdp2: %d rows, %.0f s" % (len(rows), time.time() - t_start))


if __name__ == "__main__":
    only = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--only=")]
    sections = (gemms, attention, memops, steps, fp8_gemms, overlap, fsdp2)
    if only:
        sections = [f for f in sections if f.__name__ in only[0].split(",")]
    for section in sections:
        try:
            section()
        except Exception as e:  # noqa: BLE001
            log(section.__name__, "failed:", repr(e))
    log("smi after", smi("clocks.sm,clocks.mem,power.draw,temperature.gpu"))
    log("total %.0f s" % (time.time() - T0))
    for name in ("gemm.csv", "attention.csv", "steps.csv", "fp8_gemm.csv", "overlap.csv",
                 "fsdp2_steps.csv"):
        p = os.path.join(OUT, name)
        if os.path.exists(p):
            print(open(p).read()[-2500:])
