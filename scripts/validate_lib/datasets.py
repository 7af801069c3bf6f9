"""Ground-truth files -> rows to check and protosim jobs that predict them.

Each loader returns (rows, jobs). A Row is one measurement; a Job is one protosim process that
predicts one or more rows (a `run` of a strategy, or one `collective` call for a whole nccl
file). Rows that cannot be turned into a job (missing or bad columns, unsupported model or
device) come back already failed; rows outside --max-gpus come back skipped.
"""
import csv
import glob
import os
import re

VTRAIN_FILE = "vtrain_ground_truth_single_A100.csv"
MEGATRON_FILE = "megatron_public.csv"
NEUSIGHT_FILE = "neusight_labels_fp32.csv"
NCCL_RE = re.compile(r"^nccl_allreduce_(a100|v100)_(\d+)gpu_vtrain\.csv$")

VTRAIN_VOCAB = 51200          # not in the file; Megatron-DeepSpeed GPT default (padded)
NCCL_MIN_BYTES = 1048576      # only sizes >= 1 MiB count in the summary
QUICK_VTRAIN_STRIDE = 24      # --quick: data rows 0, 24, 48, ... of the vTrain file
QUICK_NCCL_SIZES = (1 << 20, 1 << 24, 1 << 27, 1 << 30)   # 1 MiB, 16 MiB, 128 MiB, 1 GiB
QUICK_MEGATRON_ROWS = 3       # --quick: the 3 rows with the fewest GPUs (file order breaks ties)


class Row:
    __slots__ = ("dataset", "file", "rid", "desc", "group", "measured", "counted",
                 "status", "message", "predicted", "job", "shape", "fold", "strength")

    def __init__(self, dataset, file, rid, desc="", group="", measured=None):
        self.dataset, self.file, self.rid, self.desc = dataset, file, rid, desc
        self.group, self.measured = group, measured
        self.counted = True       # enters the summary when ok
        self.status, self.message, self.predicted = "pending", "", None
        self.job = None           # rows with the same job are alternative plans for it
        self.shape = None         # per-GPU kernel shapes (vTrain: hidden, TP, micro-batch)
        self.fold = None          # what varies among rows of one shape (vTrain: layers)
        self.strength = ""        # the file's evidence strength (A/B/C) where it has one

    def fail(self, msg):
        self.status, self.message = "failed", msg
        return self

    def skip(self, msg):
        self.status, self.message = "skipped", msg
        return self

    def error(self):
        if self.status != "ok" or not self.measured:
            return None
        return self.predicted / self.measured - 1.0


class Job:
    """kind 'run': strategy text + cluster; kind 'collective': op, gpus, sizes, row per size."""

    def __init__(self, kind, cluster, rows, strategy=None, op=None, gpus=None, sizes=None):
        self.kind, self.cluster, self.rows = kind, cluster, rows
        self.strategy, self.op, self.gpus, self.sizes = strategy, op, gpus, sizes


class NotModelled(Exception):
    """A row needs something protosim does not model yet: skipped, naming it."""


class BadRow(Exception):
    pass


def _get(rec, col, conv, allow_empty=False, default=None):
    if col not in rec or rec[col] is None:
        raise BadRow("missing column '%s'" % col)
    s = rec[col].strip()
    if s == "":
        if allow_empty:
            return default
        raise BadRow("empty value in column '%s'" % col)
    try:
        return conv(s)
    except ValueError:
        raise BadRow("bad value in column '%s': %r" % (col, s))


def _pos_int(s):
    v = float(s)
    if v != int(v) or v <= 0:
        raise ValueError(s)
    return int(v)


def _pos_float(s):
    v = float(s)
    if not v > 0:
        raise ValueError(s)
    return v


WORKLOAD_KEYS = ("name", "family", "layers", "hidden", "heads", "seq", "vocab", "ffn_hidden",
                 "kernels", "activation", "attention")   # optional keys last
# llm rows also set these (the other loaders' models keep only WORKLOAD_KEYS, as before)
LLM_WORKLOAD_KEYS = ("name", "family", "layers", "hidden", "heads", "kv_heads", "seq", "vocab",
                     "ffn_hidden", "positions", "bias", "dropout", "tied_embeddings",
                     "attention", "kernels", "head_dim", "activation", "sliding_window",
                     "sliding_window_layers", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                     "qk_rope_head_dim", "v_head_dim", "mtp_layers", "experts", "experts_topk",
                     "shared_experts", "dense_layers", "dense_ffn_hidden")


def _workload_yaml(m):
    keys = LLM_WORKLOAD_KEYS if m.get("_llm") else WORKLOAD_KEYS
    return "{" + ", ".join("%s: %s" % (k, m[k]) for k in keys if k in m) + "}"


def _flow(d):
    return ", ".join("%s: %s" % (k, v) for k, v in d.items())


def strategy_yaml(workload, gb, mb, precision, optimizer, tp=1, pp=1, dp=1, recompute="none",
                  schedule="1f1b", tensor_extra=None, data_extra=None, virtual_stages=1,
                  children=None, pipeline_extra=None, cp=1, expert=None, recompute_modules=None,
                  fp8_attention=False):
    tensor = {"degree": tp}
    tensor.update(tensor_extra or {})
    data = {"degree": dp}
    data.update(data_extra or {})
    pipe = {"degree": pp, "schedule": schedule}
    if virtual_stages > 1:
        pipe["virtual_stages"] = virtual_stages
    pipe.update(pipeline_extra or {})
    text = ("workload: %s\n"
            "batch: {global: %d, micro: %d}\n"
            "precision: %s\n"
            "optimizer: %s\n"
            "%s"
            "strategy:\n"
            "  tensor: {%s}\n"
            "  pipeline: {%s}\n"
            "  data: {%s}\n"
            "  recompute: %s\n") % (_workload_yaml(workload), gb, mb, precision, optimizer,
                                    "fp8_attention: true\n" if fp8_attention else "",
                                    _flow(tensor), _flow(pipe), _flow(data), recompute)
    if recompute_modules:
        text += "  recompute_modules: [%s]\n" % ", ".join(recompute_modules)
    if cp > 1:
        text += "  context: {degree: %d}\n" % cp
    if expert:
        text += "  expert: {%s}\n" % _flow(expert)
    if children:
        text += "  children:\n" + "".join('    "%s": {%s}\n' % (k, _flow(v))
                                           for k, v in children)
    return text


def _read_dicts(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ---------------------------------------------------------------- vTrain
def load_vtrain(gt_dir, quick=False, **_):
    rows, jobs = [], []
    recs = _read_dicts(os.path.join(gt_dir, VTRAIN_FILE))
    for i, rec in enumerate(recs):
        if quick and i % QUICK_VTRAIN_STRIDE:
            continue
        row = Row("vtrain", VTRAIN_FILE, i + 1)
        rows.append(row)
        try:
            g = _get(rec, "# GPUs", _pos_int)
            gb = _get(rec, "global batch", _pos_int)
            mb = _get(rec, "micro batch", _pos_int)
            h = _get(rec, "hidden size", _pos_int)
            a = _get(rec, "attention heads", _pos_int)
            L = _get(rec, "# layers", _pos_int)
            s = _get(rec, "sequence length", _pos_int)
            tp = _get(rec, "tensor parallelism", _pos_int)
            dp = _get(rec, "data parallelism", _pos_int)
            pp = _get(rec, "pipeline parallelism", _pos_int)
            ms = _get(rec, "iteration time (ms)", _pos_float)
        except BadRow as e:
            row.fail(str(e))
            continue
        row.desc = "h%d L%d g%d tp%d pp%d dp%d gb%d mb%d" % (h, L, g, tp, pp, dp, gb, mb)
        row.group = "h%d L%d g%d" % (h, L, g)
        row.job = "h%d L%d g%d gb%d" % (h, L, g, gb)
        row.shape, row.fold = "h%d tp%d mb%d" % (h, tp, mb), L
        row.measured = ms / 1000.0
        wl = {"family": "gpt", "layers": L, "hidden": h, "heads": a, "seq": s,
              "vocab": VTRAIN_VOCAB}
        jobs.append(Job("run", ("gen", "dgx-a100", 1, g, None, None), [row],
                        strategy=strategy_yaml(wl, gb, mb, "fp16", "adam", tp, pp, dp, "full")))
    return rows, jobs


# ---------------------------------------------------------------- nccl-tests
NCCL_HEADER = ["size(B)", "count", "type", "time(ns)", "busbw(GB/s)", "time(ns)", "busbw(GB/s)"]


def load_nccl(gt_dir, quick=False, **_):
    rows, jobs = [], []
    names = sorted((n for n in os.listdir(gt_dir) if NCCL_RE.match(n)),
                   key=lambda n: (NCCL_RE.match(n).group(1), int(NCCL_RE.match(n).group(2))))
    for name in names:
        kind, gpus = NCCL_RE.match(name).group(1), int(NCCL_RE.match(name).group(2))
        cluster = ("gen", "dgx-%s" % kind, 1, None, None, None)
        with open(os.path.join(gt_dir, name), newline="") as f:
            recs = list(csv.reader(f))
        header, recs = (recs[0], recs[1:]) if recs else ([], [])
        bad_header = [h.strip() for h in header[:5]] != NCCL_HEADER[:5]
        by_size = {}
        for i, rec in enumerate(recs):
            row = Row("nccl", name, i + 1, group="%s g%d" % (kind, gpus))
            if bad_header:
                row.fail("unexpected header %r (want %s)"
                         % (",".join(header), ",".join(NCCL_HEADER)))
                rows.append(row)
                continue
            try:
                d = dict(zip(["size", "count", "type", "time"], rec[:4]))
                size = _get(d, "size", _pos_int)
                t_ns = _get(d, "time", _pos_float)
            except BadRow as e:
                if quick:
                    continue
                rows.append(row.fail(str(e).replace("'size'", "'size(B)'")
                                     .replace("'time'", "'time(ns)'")))
                continue
            if quick and size not in QUICK_NCCL_SIZES:
                continue
            row.desc = "allreduce %s %dgpu %s" % (kind, gpus, _human_bytes(size))
            row.measured = t_ns * 1e-9
            row.counted = size >= NCCL_MIN_BYTES
            rows.append(row)
            if size in by_size:
                row.fail("size %d given twice in the file" % size)
                continue
            by_size[size] = row
        if by_size:
            sizes = sorted(by_size)
            jobs.append(Job("collective", cluster, by_size, op="allreduce", gpus=gpus,
                            sizes=sizes))
    return rows, jobs


def _human_bytes(n):
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            v = n / k
            return ("%d %s" % (v, unit)) if v == int(v) else ("%.1f %s" % (v, unit))
    return "%d B" % n


# ---------------------------------------------------------------- Megatron public tables
def load_megatron(gt_dir, quick=False, max_gpus=128, **_):
    rows, jobs, cand = [], [], []
    recs = _read_dicts(os.path.join(gt_dir, MEGATRON_FILE))
    for i, rec in enumerate(recs):
        row = Row("megatron", MEGATRON_FILE, i + 1)
        try:
            src = _get(rec, "source", str)
            gpu = _get(rec, "gpu", str)
            model = _get(rec, "model", str)
            gpus = _get(rec, "gpus", _pos_int)
            row.desc = "%s %s %dgpu" % (gpu.split("-")[0], model, gpus)
            row.group = src
            row.measured = _get(rec, "derived_iteration_s", _pos_float)
            wl = {"family": "gpt", "layers": _get(rec, "layers", _pos_int),
                  "hidden": _get(rec, "hidden", _pos_int), "heads": _get(rec, "heads", _pos_int),
                  "seq": _get(rec, "seq", _pos_int), "vocab": _get(rec, "vocab", _pos_int)}
            tp = _get(rec, "tp", _pos_int)
            pp = _get(rec, "pp", _pos_int)
            dp = _get(rec, "dp", _pos_int)
            gb = _get(rec, "global_batch", _pos_int)
            mb = _get(rec, "micro_batch", _pos_int, allow_empty=True, default=1)
            prec = _get(rec, "precision", str)
            rc = _get(rec, "recompute", str, allow_empty=True, default="none")
            gpn = _get(rec, "gpus_per_node", _pos_int)
            nic = _get(rec, "nic_gbps_per_gpu", _pos_float)
            row.desc = "%s %s %dgpu tp%d pp%d dp%d" % (gpu.split("-")[0], model, gpus, tp, pp, dp)
            if gpn != 8 or gpus % 8:
                raise BadRow("need 8 GPUs per node and a multiple of 8 GPUs (got %d, %d)"
                             % (gpn, gpus))
            if gpu.startswith("A100"):
                cluster = ("gen", "dgx-a100", gpus // 8, None, 8, nic)
            elif gpu.startswith("H100"):
                cluster = ("gen", "dgx-h100", gpus // 8, None, None, None)
            else:
                raise BadRow("no cluster for gpu '%s'" % gpu)
        except BadRow as e:
            rows.append(row.fail(str(e)))
            continue
        # Megatron-Core 2024 (the H100 table, "communication overlap on"): FlashAttention,
        # sequence parallelism with TP, the distributed optimizer (ZeRO-1) with overlapped
        # gradient reduce-scatter and parameter all-gather, and TP communication overlap.
        tensor_extra, data_extra = {}, {}
        if src.startswith("megatron_core"):
            wl["attention"] = "flash"
            if tp > 1:
                tensor_extra = {"sequence_parallel": "true", "comm_overlap": "true"}
            data_extra = {"zero": 1, "overlap_param_gather": "true"}
        job = Job("run", cluster, [row],
                  strategy=strategy_yaml(wl, gb, mb, prec, "adam", tp, pp, dp, rc,
                                         tensor_extra=tensor_extra, data_extra=data_extra))
        cand.append((gpus, i, row, job))
    if quick:
        cand.sort(key=lambda c: (c[0], c[1]))
        cand = cand[:QUICK_MEGATRON_ROWS]
        cand.sort(key=lambda c: c[1])
    for gpus, _, row, job in cand:
        rows.append(row)
        if max_gpus is not None and gpus > max_gpus:
            row.skip("%d GPUs > --max-gpus %d" % (gpus, max_gpus))
        else:
            jobs.append(job)
    rows.sort(key=lambda r: r.rid)
    return rows, jobs


# ---------------------------------------------------------------- NeuSight single-GPU training
# NeuSight model name -> (model file in workloads/models, or None, inline overrides)
# The labels time HuggingFace transformers models (BertLMHeadModel, GPT2LMHeadModel,
# OPTForCausalLM) in eager PyTorch: `kernels: eager`, and the activation each config names
# (BERT "gelu" = erf, one kernel; GPT-2's "gelu_new" = tanh GELU written as 8 ops; OPT relu).
NEUSIGHT_MODELS = {
    "bert_large": ("bert-large", {"kernels": "eager", "activation": "gelu"}),
    "gpt2_large": ("gpt2-large", {"kernels": "eager", "activation": "gelu_tanh"}),
    # NeuSight's GPT-3 configs (scripts/asplos/data/DLmodel_configs/gpt3_*.json) are HF GPT-2
    # models with the GPT-2 vocab (50257), and its gpt3_xl takes the paper's 24 heads x 128
    # (n_embd 3072), not the paper's d_model 2048: ~2.7B parameters, not 1.3B.
    "gpt3_xl": ("gpt3-1.3b", {"name": "gpt3-xl-neusight", "hidden": 3072, "heads": 24,
                              "vocab": 50257, "kernels": "eager", "activation": "gelu_tanh"}),
    "gpt3_27": ("gpt3-2.7b", {"vocab": 50257, "kernels": "eager", "activation": "gelu_tanh"}),
    # OPT-1.3B (Zhang et al. 2022): 24 layers, d 2048, 32 heads, vocab 50272, ffn 4d, relu
    "opt_13": (None, {"name": "opt-1.3b", "family": "gpt", "layers": 24, "hidden": 2048,
                      "heads": 32, "vocab": 50272, "kernels": "eager", "activation": "relu"}),
}


def read_model_file(path):
    """Flat `key: value` YAML of workloads/models/*.yaml (no nesting there)."""
    m = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].rstrip()
            mm = re.match(r"^([A-Za-z_]+)\s*:\s*(\S.*)$", line)
            if mm:
                v = mm.group(2).strip().strip("'\"")
                m[mm.group(1)] = int(v) if re.fullmatch(r"\d+", v) else v
    return m


def read_device_names(path):
    names = []
    with open(path) as f:
        for line in f:
            mm = re.match(r"^\s*(?:-\s*)?name\s*:\s*['\"]?([^'\"#\s]+)", line)
            if mm:
                names.append(mm.group(1))
    return names


def _tokens(name):
    return frozenset(t for t in re.split(r"[-_ ]+", name.upper()) if t)


# Explicit NeuSight -> protosim names, tried before the token match: PyTorch on an MI250 sees
# one of its two dies (GCDs) as a device, so the labels are for one GCD.
NEUSIGHT_DEVICE_ALIASES = {"AMD_Instinct_MI250": ["MI250-GCD"]}


def map_device(neusight_name, device_names):
    """NeuSight device -> protosim device: drop the vendor prefix, then match names as sets of
    '-'/'_'-separated tokens, case-insensitively (NVIDIA_A100_80GB_PCIe == A100-PCIE-80GB,
    Tesla_V100-PCIE-32GB == V100-PCIE-32GB, AMD_Instinct_MI210 == MI210)."""
    for alias in NEUSIGHT_DEVICE_ALIASES.get(neusight_name, []):
        if alias in device_names:
            return alias, alias
    stripped = re.sub(r"^(NVIDIA|Tesla|AMD_Instinct|AMD)[_ -]", "", neusight_name)
    want = _tokens(stripped)
    for n in device_names:
        if _tokens(n) == want:
            return n, stripped
    return None, stripped


def load_neusight(gt_dir, repo=None, devices_yaml=None, **_):
    rows, jobs = [], []
    recs = _read_dicts(os.path.join(gt_dir, NEUSIGHT_FILE))
    try:
        dev_names = read_device_names(devices_yaml)
        dev_err = None
    except OSError as e:
        dev_names, dev_err = [], "cannot read %s: %s" % (devices_yaml, e.strerror)
    for i, rec in enumerate(recs):
        if rec.get("mode", "").strip() != "train":
            if "mode" in rec:
                continue
        row = Row("neusight", NEUSIGHT_FILE, i + 1)
        rows.append(row)
        try:
            if "mode" not in rec:
                raise BadRow("missing column 'mode'")
            dev = _get(rec, "device", str)
            model = _get(rec, "model", str)
            seq = _get(rec, "seq", _pos_int)
            batch = _get(rec, "batch", _pos_int)
            row.desc = "%s %s s%d b%d" % (dev, model, seq, batch)
            row.group = "%s %s" % (dev, model)
            row.measured = _get(rec, "e2e_ms", _pos_float) / 1000.0
            par = _get(rec, "parallel", str, allow_empty=True, default="")
        except BadRow as e:
            row.fail(str(e))
            continue
        if par:
            row.fail("parallel=%s not supported (single-GPU rows only)" % par)
            continue
        if model.startswith("switch"):
            row.fail("MoE not supported yet (%s)" % model)
            continue
        if model not in NEUSIGHT_MODELS:
            row.fail("unknown model '%s'" % model)
            continue
        if dev_err:
            row.fail(dev_err)
            continue
        pdev, stripped = map_device(dev, dev_names)
        if not pdev:
            row.fail("unknown device %s (no %s in devices.yaml)" % (dev, stripped))
            continue
        base, over = NEUSIGHT_MODELS[model]
        wl = {}
        if base:
            try:
                wl = read_model_file(os.path.join(repo, "workloads", "models", base + ".yaml"))
            except OSError as e:
                row.fail("cannot read model %s: %s" % (base, e.strerror))
                continue
        wl.update(over)
        wl["seq"] = seq
        jobs.append(Job("run", ("one", pdev), [row],
                        strategy=strategy_yaml(wl, batch, batch, "fp32", "none")))
    return rows, jobs


# ---------------------------------------------------------------- public LLM training runs
LLM_FILE = "llm_training_public.csv"
ISSUE = "issue 11"


def llm_source_label(src):
    """Short per-source label for the summary (the CSV keeps the full source)."""
    s = src.strip()
    m = re.search(r"@([0-9a-f]{7,})", s)
    commit = m.group(1)[:8] if m else ""
    if s.startswith("mosaicml/llm-foundry"):
        tag = "A100-40GB" if "40GB" in s else "A100-80GB"
        return "llm-foundry@%s %s%s" % (commit, tag, " Jul-2023" if "Jul-2023" in s else "")
    if s.startswith("pytorch/torchtitan"):
        m = re.search(r"\) (.*) table$", s)
        if "405B" in s:
            return "torchtitan@%s Llama 3.1 405B" % commit
        return "torchtitan@%s %s" % (commit, m.group(1) if m else "")
    if s.startswith("bigscience-workshop"):
        return "bigscience tr11 BLOOM layouts"
    m = re.search(r"\(([0-9.]+) NeMo container", s)
    if s.startswith("NVIDIA-NeMo/Megatron-Bridge") and m:
        return "Megatron-Bridge NeMo %s H100" % m.group(1)
    m = re.match(r"NVIDIA NeMo performance summary ([0-9.]+)", s)
    if m:
        return "NeMo %s H100" % m.group(1)
    if s.startswith("yanring/Megatron-MoE-ModelZoo"):
        return "Megatron-MoE-ModelZoo Mixtral"
    if s.startswith("NVIDIA/Megatron-LM"):
        return "Megatron-LM MoE README"
    return s[:40]


def _lead_int(text, col):
    m = re.match(r"\s*(\d+)", text or "")
    if not m:
        raise BadRow("bad value in column '%s': %r" % (col, text))
    return int(m.group(1))


def _opt_int(rec, col, default):
    """Empty -> default (the row's notes say so); else a positive int."""
    return _get(rec, col, _pos_int, allow_empty=True, default=default)


def llm_fp8_attention(text):
    """Whether the precision column runs the fused attention in FP8 (Megatron-Core's
    --fp8-dot-product-attention: protosim's fp8_attention)."""
    return "fp8 attention" in text.strip().lower()


def llm_precision(text):
    t = text.strip().lower()
    if t.startswith("nvfp4"):
        # protosim's fp4: NVFP4 GEMMs in the layers, bf16 elsewhere (the recipe's layers kept in
        # bf16, its Hadamard transforms and fp8 parts are not modelled apart)
        return "fp4"
    if t.startswith("fp8") or t.startswith("float8") or t.startswith("mxfp8"):
        # protosim's fp8: FP8 GEMMs in the layers, bf16 elsewhere; the scaling recipe (delayed,
        # per-tensor current, MX 32-element blocks: FP8-CS, FP8-MX, MXFP8) runs at the same
        # tensor-core rate and is not modelled apart
        return "fp8"
    for p in ("bf16", "fp16", "fp32"):
        if t.startswith(p):
            return p
    raise BadRow("unknown precision %r" % text)


def llm_recompute_modules(text):
    """The Megatron-Core recompute modules a recompute column names, as protosim's
    recompute_modules (None: none named): the DeepSeek-V3 report's "RMSNorm and MLA
    up-projection recomputed" (every RMSNorm: the layers' two, `layernorm`, and the latents',
    inside `mla_up_proj`), a recipe's "mla_up_proj (selective)". Another module named in a
    recipe is NotModelled (llm_recompute)."""
    t = text.strip().lower()
    if t.startswith("rmsnorm and mla up-projection recomputed"):
        return ["layernorm", "mla_up_proj"]
    if t.startswith("per recipe:"):
        names = [n.strip() for n in re.sub(r"\(selective\)", "", t[len("per recipe:"):]).split(",")]
        if names and all(n in ("mla_up_proj", "layernorm", "core_attn") for n in names):
            return names
    return None


def llm_recompute(text, layers):
    """recompute column -> (recompute, children, assumption or None).

    full... -> full; none... -> none; 'not stated' / 'per perf recipe' -> none (Megatron-Core's
    default: no recompute), reported as assumed; torchtitan's layer-level selective AC (option
    '2': torchtitan counts blocks from 1 and wraps every 2nd, i.e. 0-based layers 1, 3, 5, ...)
    -> full recompute on those layers through `children`, none elsewhere: exactly what it does;
    torchtitan's op-level SAC -> `op` (protosim's model of that policy: every second matmul of
    the block and the cheap ops recomputed); other selective -> Megatron's `selective`."""
    t = text.strip().lower()
    if llm_recompute_modules(text):
        return "selective", None, None
    if t.startswith("full"):
        return "full", None, None
    if t.startswith("selective") and "layer-level" in t:
        m = re.search(r"'(\d+)'", t)
        every = int(m.group(1)) if m else 2
        kids = [("layers.%d" % i, {"recompute": "full"})
                for i in range(layers) if (i + 1) % every == 0]
        return "none", kids, None
    if t.startswith("selective") and "op-level" in t:
        return "op", None, None
    if t.startswith("selective"):
        return "selective", None, None
    if t.startswith("per recipe: none"):
        return "none", None, None
    if t.startswith("per recipe:"):
        # Megatron-Core's recompute modules (mla_up_proj, moe_act, ...): a recompute of
        # part of a layer protosim does not describe
        raise NotModelled("the recompute of %s" % t[len("per recipe:"):].strip())
    if t.startswith("none stated") or "not stated" in t:
        return "none", None, "recompute not stated: none"
    if t.startswith("none"):
        return "none", None, None
    raise BadRow("unknown recompute %r" % text)


def llm_features_missing(rec):
    """What protosim does not model yet that the row needs ([] if none)."""
    need = []
    fam = rec.get("family") or ""
    if "sliding window" in fam.lower() and "GPT-OSS" not in fam:
        # llm_workload maps GPT-OSS's alternating window; another family's is not known
        need.append("sliding-window attention of family %r" % fam)
    return need


# frameworks by source: Megatron-Core (NeMo, Megatron-Bridge, Megatron-LM), Megatron-DeepSpeed
# (BLOOM), PyTorch FSDP (llm-foundry, torchtitan)
def _llm_framework(src):
    # the Zero Bubble paper ran a Megatron-LM fork; NVIDIA's MLPerf submissions NeMo
    if src.startswith(("NVIDIA NeMo", "NVIDIA-NeMo", "NVIDIA/Megatron-LM", "yanring/",
                       "Qi et al.", "mlcommons/", "docs.nvidia.com/nemo")):
        return "mcore"
    if src.startswith("bigscience"):
        return "megatron-deepspeed"
    return "fsdp"


def llm_fsdp(src, rec):
    """data.fsdp of a ZeRO-3 row: the PyTorch FSDP its source ran, or None (the bare model)."""
    prec = rec.get("precision", "")
    if src.startswith("mosaicml/llm-foundry"):
        # Composer wraps the model in FullyShardedDataParallel (FSDP1), FULL_SHARD;
        # mixed_precision PURE: parameters, reduction and buffers in bf16 in every Composer.
        # DEFAULT changed meaning (torch 1.13 era: fp32 parameters gathered, bf16 reduction;
        # torch 2.0: bf16 and bf16; 2024: bf16 and fp32) and the rows do not say which
        # Composer ran: fp32 gathers are not modelled, so those rows stay the bare model
        if "PURE" not in prec:
            return None
        return "{version: 1, reshard_after_forward: true, reduce_dtype: bf16}"
    if src.startswith("pytorch/torchtitan"):
        # fully_shard (FSDP2); the rows say "reshard after fwd" (the blocks' policy without a
        # pipeline); mixed_precision_reduce float32 is torchtitan's default
        return "{version: 2, reshard_after_forward: true, reduce_dtype: fp32}"
    return None


def llm_workload(rec, family_text, framework):
    """The row's model as an inline protosim workload (dict, '_llm' marks the key set)."""
    f = family_text.strip()
    wl = {"_llm": True,
          "name": re.sub(r"[^A-Za-z0-9.]+", "-", _get(rec, "model", str)).strip("-").lower(),
          "layers": _get(rec, "layers", _pos_int), "hidden": _get(rec, "hidden", _pos_int),
          "heads": _get(rec, "heads", _pos_int), "seq": _get(rec, "seq", _pos_int),
          "vocab": _get(rec, "vocab", _pos_int),
          "ffn_hidden": _get(rec, "ffn_hidden", _pos_int)}
    kv = _get(rec, "kv_heads", _pos_int, allow_empty=True, default=None)
    if f.startswith("MPT"):
        # llm-foundry's benchmark models (library defaults, not the released MPT-7B/30B):
        # learned positions, biases, no dropout, tied LM head, vocab 50368 (the row's column)
        wl.update(family="gpt", positions="learned", bias="true", dropout="false",
                  tied_embeddings="true")
    elif f.startswith("BLOOM"):
        # BLOOM (tr11): ALiBi, biases, tied embeddings; the embedding LayerNorm is not modelled
        wl.update(family="gpt", positions="alibi")
    elif f.startswith("GPT-3"):
        wl.update(family="gpt")
    elif f.startswith(("Llama", "Mixtral", "Qwen3-MoE")):
        # Mixtral and Qwen3-MoE are Llama-shaped (RMSNorm, rotary, SwiGLU, untied); Qwen3's
        # head_dim is 128 whatever hidden / heads (config.json, head_dim; not a CSV column);
        # its QK-norm is not modelled (workloads/models/qwen3-30b-a3b.yaml)
        wl.update(family="llama")
        if kv:
            wl["kv_heads"] = kv
        if f.startswith("Qwen3"):
            wl["head_dim"] = 128
    elif f.startswith("Nemotron-4"):
        # Nemotron-4 (its family text): LayerNorm without biases, rotary positions, GQA, an
        # ungated squared-ReLU MLP, untied embeddings, no dropout. Its RoPE rotates half of each
        # head: modelled over the whole head (the kernel passes over Q and K either way)
        wl.update(family="gpt", positions="rotary", bias="false", dropout="false",
                  tied_embeddings="false", activation="squared_relu")
        if kv:
            wl["kv_heads"] = kv
    elif f.startswith(("DeepSeek-V3", "Kimi-K2")):
        # multi-head latent attention (the family text's widths; Kimi-K2 is "DeepSeek-V3-style":
        # DeepSeek-V3's), one shared expert, the leading dense layers ("first 3 layers dense FFN
        # 18432"; Kimi-K2 "1 dense", its FFN not in its README: DeepSeek-V3's 18432, ASSUMED),
        # multi-token prediction of depth 1 (DeepSeek-V3's num_nextn_predict_layers, which
        # Megatron-Bridge's recipes place in the last chunk) unless the row says "w/o MTP";
        # Kimi-K2 has none
        mla = re.search(r"q_lora (\d+), kv_lora (\d+), qk_nope (\d+) \+ qk_rope (\d+), "
                        r"v_head (\d+)", f)
        widths = [int(x) for x in mla.groups()] if mla else [1536, 512, 128, 64, 128]
        if not mla and not f.startswith("Kimi-K2"):
            raise BadRow("DeepSeek family text without its MLA widths: %r" % f)
        dense = re.search(r"first (\d+) layers dense FFN (\d+)", f)
        kimi_dense = re.search(r"(\d+) dense \+", f)
        wl.update(family="llama", attention="mla", q_lora_rank=widths[0],
                  kv_lora_rank=widths[1], qk_nope_head_dim=widths[2],
                  qk_rope_head_dim=widths[3], v_head_dim=widths[4], shared_experts=1,
                  dense_layers=int(dense.group(1)) if dense else
                  int(kimi_dense.group(1)) if kimi_dense else 1,
                  dense_ffn_hidden=int(dense.group(2)) if dense else 18432,
                  mtp_layers=0 if f.startswith("Kimi-K2") or
                  "w/o MTP" in _get(rec, "model", str) else 1)
    elif "GPT-OSS" in f:
        # gpt-oss (openai/gpt-oss ModelConfig, transformers' GptOssConfig): Llama-shaped MoE
        # (RMSNorm, rotary, SwiGLU experts, untied) with biases on the QKV, output and expert
        # projections, head_dim and the window as the family text states them ("head_dim 64,
        # alternating 128-token sliding window": layers 0, 2, ... windowed, 1, 3, ... full).
        # Its attention sinks (a logit per head) and clamped SwiGLU are not modelled
        # (workloads/models/gpt-oss-120b.yaml)
        hd = re.search(r"head_dim (\d+)", f)
        win = re.search(r"(alternating )?(\d+)-token sliding[ -]window", f)
        if not hd or not win:
            raise BadRow("GPT-OSS family text without head_dim and window: %r" % f)
        wl.update(family="llama", bias="true", head_dim=int(hd.group(1)),
                  sliding_window=int(win.group(2)),
                  sliding_window_layers="alternate" if win.group(1) else "all")
        if kv:
            wl["kv_heads"] = kv
    else:
        raise BadRow("unknown family %r" % f)
    experts = _get(rec, "experts", _pos_int, allow_empty=True, default=1)
    if experts > 1:
        # ffn_hidden is one expert's width; the MoE rows say "force-balanced" or "dropless"
        # (imbalance 1, no capacity: protosim's defaults)
        wl["experts"] = experts
        wl["experts_topk"] = _get(rec, "topk", _pos_int)
    if f.startswith(("MPT", "BLOOM", "GPT-3")) and kv and kv != wl["heads"]:
        raise BadRow("kv_heads %d != heads for an MHA family" % kv)
    # FlashAttention: llm-foundry (notes: "flash/triton attention"), torchtitan (SDPA's flash
    # kernel) and Megatron-Core / NeMo (TE's fused flash attention) all use it; the 2022
    # BLOOM layout search ran Megatron-DeepSpeed's fused softmax (unfused attention).
    if framework != "megatron-deepspeed" and "attention" not in wl:
        wl["attention"] = "flash"
    # torchtitan without torch.compile (the A100 rows' precision column says "no compile")
    # runs RMSNorm, SwiGLU and the rotary embedding as eager PyTorch ops
    if rec.get("source", "").startswith("pytorch/torchtitan") and "no compile" in rec.get("precision", ""):
        wl["kernels"] = "eager"
    return wl


# rack-scale GPUs: one NVL72 rack is one cluster node of up to 72 GPUs in one NVLink domain
NVL72_KINDS = {"GB200": "gb200-nvl72", "GB300": "gb300-nvl72"}
# 8-GPU systems of the later GPUs (topology/generate.c)
DGX_KINDS_LATER = {"B300": ("dgx-b300", "B300-SXM-288GB"), "H800": ("dgx-h800", "H800-SXM5-80GB")}


def nvl72_racks(gpus):
    """(racks, GPUs per rack) of an NVL72 job: at most 72 GPUs in one rack; whole racks of 72;
    else racks of 64 (ASSUMED: a job placed on 16 of each rack's 18 compute trays, the 64-GPU
    NVLink domains the Megatron-Bridge and MLPerf GB200 jobs use when their size is a multiple
    of 64 but not of 72); anything else is refused."""
    if gpus <= 72:
        return 1, gpus
    for per in (72, 64):
        if gpus % per == 0:
            return gpus // per, per
    raise BadRow("%d GPUs is neither whole NVL72 racks nor racks of 64" % gpus)


def llm_cluster(gpu, gpus, src, device_names):
    """(cluster key, assumption or None) for the row's GPU and count; BadRow/None if none."""
    if gpu in NVL72_KINDS:
        if gpu not in device_names:
            return None, "device %s not in topology/devices/devices.yaml" % gpu
        racks, per = nvl72_racks(gpus)
        return ("gen", NVL72_KINDS[gpu], racks, per if per != 72 else None, None, None), (
            "%d GPUs of each rack (ASSUMED)" % per if gpus > 72 and per != 72 else None)
    if gpu in DGX_KINDS_LATER:
        kind, dev = DGX_KINDS_LATER[gpu]
        if dev not in device_names:
            return None, "device %s not in topology/devices/devices.yaml" % dev
        if gpus % 8 and gpus > 8:
            raise BadRow("%d GPUs is not whole 8-GPU nodes" % gpus)
        return ("gen", kind, max(1, gpus // 8), gpus if gpus < 8 else None, None, None), None
    if gpus % 8 and gpus > 8:
        raise BadRow("%d GPUs is not whole 8-GPU nodes" % gpus)
    nodes, gpn = (gpus // 8, None) if gpus >= 8 else (1, gpus)
    if src.startswith("bigscience"):
        # Jean Zay A100 nodes (BLOOM model card: 8 GPUs per node, 4 Omni-Path links of
        # 100 Gb/s); the row's notes say only "48 nodes, Omni-Path"
        nics, gbps, note = 4, 100.0, "Jean Zay: 4 x 100 Gb/s Omni-Path per node (model card)"
    else:
        nics, gbps, note = None, None, None   # generator defaults: 8 NICs (200 / 400 Gb/s)
    if gpu == "A100-SXM4-80GB":
        return ("gen", "dgx-a100", nodes, gpn, nics, gbps), note
    if gpu == "A100-SXM4-40GB":
        # `protosim cluster dgx-a100 --gpu A100-SXM4-40GB`: the 40 GB DGX A100 differs only in
        # the GPU's memory size and bandwidth (same node, NVSwitch, NICs)
        if gpu not in device_names:
            return None, "A100-SXM4-40GB not in topology/devices/devices.yaml"
        return ("gen", "dgx-a100", nodes, gpn, nics, gbps, gpu), note
    if gpu == "H100-SXM5-80GB":
        return ("gen", "dgx-h100", nodes, gpn, nics, gbps), note
    if gpu == "B200-SXM-180GB" and gpu in device_names:
        return ("gen", "dgx-b200", nodes, gpn, nics, gbps), note
    if gpu == "H100-SXM-96GB-HBM2e-500W" and gpu in device_names:
        # Meta's Grand Teton hosts (torchtitan's docs): 8 H100 on NVLink (the HGX H100 board's
        # NVSwitches, as a DGX H100) and 400 Gb/s of RDMA per GPU (the DGX H100 template's 8 x
        # 400G NICs), GPUs of the 96 GB 500 W part
        return ("gen", "dgx-h100", nodes, gpn, nics, gbps, gpu), (
            note or "Grand Teton: a DGX H100 node (NVSwitch, 8 x 400G) with its GPUs")
    return None, ("device %s not in topology/devices/devices.yaml" % gpu
                  if gpu not in device_names else "no generated cluster for %s" % gpu)


# ---------------------------------------------------------------- frontier LLM training runs
FRONTIER_FILE = "llm_frontier_public.csv"
FRONTIER_ISSUE = "issue 32"
# what protosim cannot run yet, by what the row needs (llm_frontier_public.md says per source
# what was read): the schedules without a pipeline bubble, multi-head latent attention, FP4
# GEMMs, the rack-scale and Hopper-export GPUs
FRONTIER_SCHEDULES_MISSING = ()
# the Zero Bubble paper's automatically searched schedules run as their handcrafted
# counterparts at the same memory limit (its section 3.1): ZB-1p (1F1B's memory) as ZB-H1,
# ZB-2p (twice it) as ZB-H2. The search minimises the bubble from profiled pass times, so
# the handcrafted order's bubble is at least as large: these rows are expected slow.
FRONTIER_SCHEDULE_AS = {"zb-1p": "zb-h1", "zb-2p": "zb-h2", "zb-v": "zb-v",
                        "dualpipe": "dualpipe"}
# DeepSeek-V3's report states no micro-batch size: ASSUMED 1 sequence of 4,096 tokens (DualPipe
# needs 2 x PP = 32 micro-batches of the 120 sequences a DP rank takes a step: 1, 2 or 3 fit;
# 1 is what MoE pretraining at this sequence length runs)
FRONTIER_MICRO_ASSUMED = {"DeepSeek-V3": 1}
FRONTIER_DEVICES_MISSING = ()
# the Zero Bubble paper's GPT models: vocab not stated (its script's GPTSentencePieceTokenizer):
# ASSUMED 32,000, the LLaMA SentencePiece model such scripts load (a 2-5% share of the FLOPs)
ZB_VOCAB_ASSUMED = 32000
MLPERF_GPT3_VOCAB = 50257


def frontier_source_label(src, gpu):
    s = src.strip()
    if s.startswith("Qi et al."):
        return "Zero Bubble paper (A100)"
    m = re.search(r"NeMo container, DGX-([A-Z0-9]+)", s)
    if s.startswith("NVIDIA-NeMo/Megatron-Bridge") and m:
        return "Megatron-Bridge %s" % m.group(1)
    if s.startswith("docs.nvidia.com/nemo-framework"):
        return "NeMo docs %s" % gpu
    m = re.match(r"mlcommons/training_results_(v[0-9.]+)", s)
    if m:
        return "MLPerf Training %s %s" % (m.group(1), gpu)
    if s.startswith("DeepSeek-V3"):
        return "DeepSeek-V3 report (H800)"
    return s[:40]


def frontier_vocab(src, rec):
    """A vocab the row leaves blank: the Zero Bubble paper's ASSUMED (ZB_VOCAB_ASSUMED); the
    MLPerf Llama 3.1 405B's tokenizer is Mixtral-8x22B's (its family text), 32,768 entries;
    any other is not known (BadRow)."""
    if src.startswith("Qi et al."):
        return ZB_VOCAB_ASSUMED
    if "Mixtral-8x22B tokenizer" in rec.get("family", ""):
        return 32768
    if src.startswith("mlcommons/") and "GPT-3 175B, MLPerf variant" in rec.get("family", ""):
        # the reference's vocab (mlcommons/training large_language_model/megatron-lm/README.md:
        # "the vocab size (value is 50257)"), padded as NeMo and Megatron pad it: to a multiple
        # of make_vocab_size_divisible_by (128) x the tensor degree
        multiple = 128 * _opt_int(rec, "tp", 1)
        return -(-MLPERF_GPT3_VOCAB // multiple) * multiple
    raise BadRow("vocab not stated and not known")


def frontier_schedule(rec):
    """The schedule= of a frontier row's notes ("" if none)."""
    m = re.match(r"schedule=([a-z0-9-]+)", rec.get("notes", ""))
    return m.group(1) if m else ""


def frontier_missing(rec, gpu):
    """What protosim does not model yet that a frontier row needs ([] if none)."""
    need = []
    if frontier_schedule(rec) in FRONTIER_SCHEDULES_MISSING:
        need.append("the %s schedule" % frontier_schedule(rec))
    fam = rec.get("family", "")
    if gpu in FRONTIER_DEVICES_MISSING:
        need.append("a %s device" % gpu)
    return need


def load_frontier(gt_dir, quick=False, max_gpus=None, devices_yaml=None, **_):
    return _load_llm_file(gt_dir, FRONTIER_FILE, FRONTIER_ISSUE, True, quick, max_gpus,
                          devices_yaml)


def load_llm(gt_dir, quick=False, max_gpus=None, devices_yaml=None, **_):
    return _load_llm_file(gt_dir, LLM_FILE, ISSUE, False, quick, max_gpus, devices_yaml)


def _load_llm_file(gt_dir, file, issue, frontier, quick, max_gpus, devices_yaml):
    rows, jobs = [], []
    recs = _read_dicts(os.path.join(gt_dir, file))
    try:
        dev_names = read_device_names(devices_yaml) if devices_yaml else []
    except OSError:
        dev_names = []
    for i, rec in enumerate(recs):
        row = Row("frontier" if frontier else "llm", file, i + 1)
        rows.append(row)
        try:
            src = _get(rec, "source", str)
            gpu_text = _get(rec, "gpu", str)
            gpu = gpu_text.split()[0]
            if frontier and gpu == "B200":
                gpu = "B200-SXM-180GB"  # DGX B200: the HGX board's 1000 W B200
            row.group = frontier_source_label(src, gpu.split("-")[0]) if frontier \
                else llm_source_label(src)
            sched = frontier_schedule(rec) if frontier else ""
            if frontier and src.startswith("Qi et al."):
                # the paper compares schedules: each its own group
                row.group += " " + (sched + " as " + FRONTIER_SCHEDULE_AS[sched]
                                    if FRONTIER_SCHEDULE_AS.get(sched, sched) != sched else sched)
            gpus = _get(rec, "gpus", _pos_int)
            model = _get(rec, "model", str)
            tp = _opt_int(rec, "tp", 1)
            pp = _opt_int(rec, "pp", 1)
            dp = _get(rec, "dp", _pos_int)
            cp = _opt_int(rec, "cp", 1)
            row.desc = "%s %s %dgpu tp%d pp%d dp%d%s" % (
                gpu.split("-")[0] + ("-40GB" if "40GB" in gpu else ""), model.split(" ")[0],
                gpus, tp, pp, dp, " cp%d" % cp if cp > 1 else "")
            row.measured = llm_measured(rec)
        except BadRow as e:
            row.fail(str(e))
            continue
        need = llm_features_missing(rec) + (frontier_missing(rec, gpu) if frontier else [])
        if need:
            row.skip("needs %s (%s)" % (", ".join(need), issue))
            continue
        try:
            fw = _llm_framework(src)
            if frontier and not rec.get("vocab", "").strip():
                rec = dict(rec, vocab=str(frontier_vocab(src, rec)))
            wl = llm_workload(rec, _get(rec, "family", str), fw)
            vs = _opt_int(rec, "virtual_stages", 1)
            if frontier and sched == "zb-v":
                vs = 2  # ZB-V's two chunks a stage (the schedule sets them: no virtual_stages)
            zero = _lead_int(rec.get("zero"), "zero")
            sp = _get(rec, "sequence_parallel", str, allow_empty=True,
                      default="false").lower().startswith("true")
            gb = _get(rec, "global_batch", _pos_int)
            if frontier and not rec.get("micro_batch", "").strip() and \
                    src.split(" ")[0] in FRONTIER_MICRO_ASSUMED:
                rec = dict(rec, micro_batch=str(FRONTIER_MICRO_ASSUMED[src.split(" ")[0]]))
            mb = _get(rec, "micro_batch", _pos_int)
            prec = llm_precision(_get(rec, "precision", str))
            fp8_attn = llm_fp8_attention(_get(rec, "precision", str))
            rc, kids, _ = llm_recompute(_get(rec, "recompute", str), wl["layers"])
            rc_mods = llm_recompute_modules(_get(rec, "recompute", str))
            if tp * cp * pp * dp != gpus:
                raise BadRow("tp x cp x pp x dp = %d != gpus %d" % (tp * cp * pp * dp, gpus))
            if "HSDP" in (rec.get("zero", "") + rec.get("notes", "")).upper():
                raise BadRow("HSDP without a shard group size")
            key, why = llm_cluster(gpu, gpus, src, dev_names)
        except BadRow as e:
            row.fail(str(e))
            continue
        except NotModelled as e:
            row.skip("needs %s (%s)" % (e, issue))
            continue
        if key is None:
            row.skip("needs %s (%s)" % (why, issue))
            continue
        pipe_extra = {}
        if "pp-partition type:transformer|embedding" in rec.get("notes", ""):
            # Megatron-DeepSpeed's PipelineModule balances the layers whose class names match
            # the regex: the embedding, the transformer layers and the tied head (an embedding
            # too), L + 2 of them; over stages that divide them evenly that is Megatron-Core's
            # account_for_embedding and account_for_loss
            pipe_extra = {"account_for_embedding": "true", "account_for_loss": "true"}
        elif fw == "mcore" and wl["layers"] % (pp * vs) and (wl["layers"] + 2) % (pp * vs) == 0:
            # Megatron-Bridge's recipes for the models whose layers do not fill the chunks
            # (Llama 3.1 405B: 126 over pp 8 x vp 8; Qwen3-235B: 94 over 8 x 4) set
            # account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split
            # (Megatron-Core refuses the plan otherwise)
            pipe_extra = {"account_for_embedding": "true", "account_for_loss": "true"}
        if wl.get("attention") == "mla" and pp * vs > 1:
            # Megatron-Bridge's DeepSeek-V3 layouts (recipes/deepseek: the layout map by
            # pipeline x virtual stages, and the perf recipes' "Et*4|(t*4|)*14tmL"): 61 layers
            # over 16 chunks as 4 each and 1 in the last (with MTP and the loss), over 8 as 8
            # and 5, over 4 as 16, 16, 16 and 13; Kimi-K2's (61 layers too) ASSUMED the same
            layouts = {16: [4] * 15 + [1], 8: [8] * 7 + [5], 4: [16, 16, 16, 13]}
            if wl["layers"] == 61 and pp * vs == 32:
                # the recipes' 32-chunk layout "Et*3|(tt|)*29m|L" (Megatron-Bridge's
                # set_deepseek_v3_pipeline_model_parallel_layout) gives the MTP layer and the loss
                # chunks of their own; protosim's `layers:` list keeps MTP with the head
                row.skip("needs the MTP layer and the loss on chunks of their own (the recipe's "
                         "layout Et*3|(tt|)*29m|L) (%s)" % issue)
                continue
            if wl["layers"] != 61 or pp * vs not in layouts:
                row.skip("needs a DeepSeek pipeline layout for %d layers over %d chunks (%s)"
                         % (wl["layers"], pp * vs, issue))
                continue
            pipe_extra = {"layers": "[%s]" % ", ".join(str(n) for n in layouts[pp * vs])}
        slots = wl["layers"] + (0 if "layers" in pipe_extra else len(pipe_extra))
        if "layers" not in pipe_extra and slots % (pp * vs):
            row.skip("needs uneven pipeline stages (%d layers%s over %d stages) (%s)"
                     % (wl["layers"], " + embedding + head" if pipe_extra else "", pp * vs,
                        issue))
            continue
        if max_gpus is not None and gpus > max_gpus:
            row.skip("%d GPUs > --max-gpus %d" % (gpus, max_gpus))
            continue
        tensor_extra, data_extra, expert = {}, {"zero": zero}, None
        ep = _opt_int(rec, "ep", 1)
        if wl.get("experts", 1) > 1:
            # Megatron-Core's default expert tensor degree is the tensor degree
            # (arguments.py: expert_tensor_parallel_size = tensor_model_parallel_size); the
            # rows do not state it. The `ep` column is the expert degree.
            etp = tp if (ep * tp) and (tp * dp) % (ep * tp) == 0 else 1
            expert = {"degree": ep, "tensor": etp}
        elif ep > 1:
            raise BadRow("ep %d without experts" % ep)
        if tp > 1 and sp:
            tensor_extra["sequence_parallel"] = "true"
        ptext = rec.get("precision", "").lower()
        if tp > 1 and "async tp" in ptext and "async tp off" not in ptext:
            # torchtitan's async TP: the TP all-gathers / reduce-scatters decomposed and
            # overlapped with the matmuls they feed (symmetric memory), protosim's comm_overlap
            tensor_extra["comm_overlap"] = "true"
        if zero == 3 and llm_fsdp(src, rec):
            data_extra["fsdp"] = llm_fsdp(src, rec)
        if fw == "mcore":
            # Megatron-Core as the megatron file's H100 rows: TP communication overlap, the
            # distributed optimizer's parameter all-gather overlapped with the next forward
            if tp > 1:
                tensor_extra["comm_overlap"] = "true"
            if zero in (1, 2):
                data_extra["overlap_param_gather"] = "true"
        jobs.append(Job("run", key, [row], strategy=strategy_yaml(
            wl, gb, mb, prec, "adam", tp, pp, dp, rc,
            schedule=FRONTIER_SCHEDULE_AS.get(sched) or ("interleaved" if vs > 1 else "1f1b"),
            tensor_extra=tensor_extra,
            data_extra=data_extra, virtual_stages=1 if sched == "zb-v" else vs, children=kids,
            pipeline_extra=pipe_extra, cp=cp, expert=expert, recompute_modules=rc_mods,
            fp8_attention=fp8_attn)))
    return rows, jobs


def llm_measured(rec):
    """Measured iteration time: the iteration_s column, or derived from measured_metric."""
    v = _get(rec, "iteration_s", _pos_float, allow_empty=True, default=None)
    if v is not None:
        return v
    metric = _get(rec, "measured_metric", str).lower()
    val = _get(rec, "measured_value", _pos_float)
    if metric.startswith("iteration_time_s"):
        return val
    if metric.startswith("tokens_per_s_per_gpu"):
        return (_get(rec, "global_batch", _pos_int) * _get(rec, "seq", _pos_int)
                / (val * _get(rec, "gpus", _pos_int)))
    raise BadRow("no iteration_s and cannot derive it from %r" % metric)


# ---------------------------------------------------------------- DLRM embedding kernels
DLRM_FILE = "dlrm_public.csv"
DLRM_ISSUE = "issue 13"


def dlrm_ids(text):
    """The id law of a row's distribution column as `protosim lookup --ids`."""
    t = text.lower()
    m = re.search(r"alpha\s*=\s*([0-9.]+)", t)
    if m and ("power-law" in t or "zipf" in t):
        return "zipf:" + m.group(1)
    if t.startswith("uniform"):
        return "uniform"
    raise BadRow("unknown id distribution %r" % text)


def dlrm_update(model):
    """The optimizer fused into the backward, from the model column: (adam) / (sgd) / ..."""
    for name in ("adam", "adagrad", "sgd"):
        if "(%s)" % name in model.lower() or "fused %s" % name in model.lower():
            return name
    raise BadRow("no fused optimizer named in %r" % model)


def load_dlrm_kernels(gt_dir, devices_yaml=None, **_):
    """The 1-kernel rows of dlrm_public.csv against `protosim lookup` (the lookup model alone):
    HBM rows on a GPU of devices.yaml; UVM/host tiers, unstated GPUs and whole training steps
    are skipped with the reason."""
    rows, jobs = [], []
    recs = _read_dicts(os.path.join(gt_dir, DLRM_FILE))
    dev_names = read_device_names(devices_yaml)
    for i, rec in enumerate(recs):
        if rec.get("category", "").strip() != "1-kernel":
            continue
        row = Row("dlrm_kernels", DLRM_FILE, i + 1)
        rows.append(row)
        try:
            metric = _get(rec, "metric", str)
            row.measured = _get(rec, "value", _pos_float) / 1000.0
            gpu = _get(rec, "gpu", str).split(" ")[0]
            tier = _get(rec, "sharding", str)
            model = _get(rec, "model", str)
            row.group = _get(rec, "source", str).split(" ")[0]
            row.desc = "%s %s %s %s" % (gpu, rec.get("tables"), rec.get("rows_per_table", "")[:12],
                                        metric.split(" ")[0])
        except BadRow as e:
            row.fail(str(e))
            continue
        if "uvm" in tier.lower() or "host" in tier.lower():
            row.skip("UVM / host-memory tiers are not modelled: the lookup model reads HBM "
                     "(%s)" % DLRM_ISSUE)
            continue
        if not metric.startswith(("fwd_ms", "bwd_ms", "eval_fwd_ms")):
            row.skip("a whole TorchRec training step (MLPs, input generation, launch-bound at "
                     "batch 64), not the kernel alone (%s)" % DLRM_ISSUE)
            continue
        if gpu not in dev_names:
            row.skip("GPU not stated or not in devices.yaml (%r)" % rec.get("gpu"))
            continue
        try:
            tables = _get(rec, "tables", _pos_int)
            rpt = _lead_int(rec.get("rows_per_table", ""), "rows_per_table")
            dim = _get(rec, "dim", _pos_int)
            pooling_text = _get(rec, "pooling", str)
            if not pooling_text.startswith("none"):
                raise BadRow("pooling %r: only one id per sample is parsed" % pooling_text)
            batch = _lead_int(rec.get("batch", "").replace(",", ""), "batch")
            ids = dlrm_ids(_get(rec, "distribution", str))
            update = dlrm_update(model)
        except BadRow as e:
            row.fail(str(e))
            continue
        job = Job("lookup", None, [row])
        job.args = ["--device", gpu, "--tables", str(tables), "--rows", str(rpt),
                    "--dim", str(dim), "--batch", str(batch), "--ids", ids,
                    "--update", update, "--pooling", "1"]
        job.pass_ = "bwd" if metric.startswith("bwd") else "fwd"
        jobs.append(job)
    return rows, jobs


# ---------------------------------------------------------------- DLRM end to end (issue 13)
# Table sets of dlrm_models.md -> the bundled model holding them (workloads/models/NAME.yaml)
DLRM_TABLE_SETS = (("T15/FL15", "dlrm-criteo-small"), ("T3/FL3", "dlrm-criteo-large"),
                   ("MLPerf 40M-cap", "dlrm-mlperf"))
DLRM_E2E_CLUSTERS = {
    # gpu column (first word, and the system in parentheses) -> (`protosim cluster` kind, GPU)
    "A100-SXM4-80GB": ("dgx-a100", None),
    "A100-SXM4-40GB": ("dgx-a100", "A100-SXM4-40GB"),
    "V100-SXM2-32GB": ("dgx-v100", None),
    "V100-SXM3-32GB": ("dgx-2", None),
}


def read_dlrm_model(path):
    """The keys of a bundled dlrm model file a row is checked against (lists may span lines)."""
    with open(path) as f:
        text = re.sub(r"#[^\n]*", "", f.read())
    m = {}
    for key in ("bottom_mlp", "top_mlp", "tables"):
        mm = re.search(r"^%s:\s*\[([^\]]*)\]" % key, text, re.M | re.S)
        m[key] = [int(x) for x in mm.group(1).replace("\n", " ").split(",")] if mm else None
    for key in ("embedding_dim", "pooling", "dense_features", "interaction"):
        mm = re.search(r"^%s:\s*(\S+)" % key, text, re.M)
        m[key] = mm.group(1) if mm else None
    return m


def dlrm_row_tables(text):
    """Rows per table from the rows_per_table column: its first comma-separated list of ints."""
    m = re.search(r"\d+(?:\s*,\s*\d+)+", text)
    if not m:
        raise BadRow("no per-table row counts in %r" % text[:60])
    return [int(x) for x in m.group(0).split(",")]


def dlrm_row_shape(model):
    """(dense, bottom MLP, dim, interaction, top MLP) from the model column."""
    m = re.search(r"(\d+) dense -> bottom MLP ([\d-]+); (\d+) emb tables dim (\d+); (\w+) "
                  r"interaction; top MLP ([\d-]+)", model)
    if not m:
        raise BadRow("model column not understood: %r" % model[:80])
    return (int(m.group(1)), [int(x) for x in m.group(2).split("-")], int(m.group(3)),
            int(m.group(4)), m.group(5), [int(x) for x in m.group(6).split("-")])


def dlrm_precision(text):
    t = text.lower()
    if t.startswith("amp fp16"):
        return "fp16"
    if t.startswith("tf32"):
        return "tf32"
    if t.startswith("fp32"):
        return "fp32"
    raise BadRow("unknown precision %r" % text)


def nvidia_dlrm_placement(rows, gpus):
    """NVIDIA DeepLearningExamples PyTorch DLRM's table -> GPU rule (dlrm/utils/distributed.py
    get_device_mapping / distribute_to_buckets), re-stated: on more than 4 GPUs GPU 0 keeps only
    the bottom MLP and the tables go to GPUs 1..G-1, else to all G; buckets hold at most
    ceil(tables / buckets) tables; tables are taken largest first (ties: lower index first) and
    each goes to the bucket with the fewest rows so far (ties: the earlier bucket in the current
    order, which is re-sorted by rows, stably, after each placement); a bucket that is full
    leaves the list and takes the next final position, the others follow in their last order.
    Returns the GPU of each table."""
    n = len(rows)
    nb = gpus - 1 if gpus > 4 else gpus
    cap = -(-n // nb)
    order = sorted(range(n), key=lambda i: -rows[i])        # stable: ties in index order
    live = [[] for _ in range(nb)]
    final = []
    for t in order:
        live[0].append(t)
        if len(live[0]) == cap:
            final.append(live.pop(0))
        live.sort(key=lambda b: sum(rows[i] for i in b))
    final += live
    offset = 1 if gpus > 4 else 0
    place = [None] * n
    for g, bucket in enumerate(final):
        for t in bucket:
            place[t] = g + offset
    return place


def dlrm_e2e_source_label(src):
    s = src.strip()
    m = re.search(r"\((\d\d\.\d\d) release", s)
    if s.startswith("NVIDIA/DeepLearningExamples") and m:
        return "DLE PyTorch DLRM %s" % m.group(1)
    if s.startswith("NVIDIA-Merlin/HugeCTR"):
        return "HugeCTR SOK (TF2)"
    if s.startswith("facebookresearch/dlrm"):
        return "TorchRec DLRM"
    return s[:40]


def _dlrm_flow_model(name, dense, bottom, dim, inter, top, tables):
    """An inline dlrm workload (flow YAML): a row whose tables differ from every bundled model;
    the id law and storage precision as the bundled models (zipf 1.05, fp32)."""
    return ("{name: %s, family: dlrm, dense_features: %d, bottom_mlp: [%s], top_mlp: [%s], "
            "interaction: %s, embedding_dim: %d, tables: [%s], pooling: 1, "
            "ids: {distribution: zipf, alpha: 1.05}, embedding_precision: fp32}"
            % (name, dense, ", ".join(map(str, bottom)), ", ".join(map(str, top)), inter, dim,
               ", ".join(map(str, tables))))


def load_dlrm(gt_dir, repo=None, **_):
    """The 2-e2e rows of dlrm_public.csv through `protosim run` (issue 13): the bundled model
    holding the row's table set (else an inline model of the row's tables), the row's GPUs on
    one generated DGX node, its batch and precision, SGD, and its plan: one GPU, or NVIDIA's
    table-wise placement with the bottom MLP on GPU 0; the tables' update unfused (`update:
    sparse`, as NVIDIA's DLRM: sparse gradient + torch.optim.SGD). Plans protosim refuses as "not modelled
    yet" and plans the row does not publish come back skipped with the reason."""
    rows, jobs = [], []
    recs = _read_dicts(os.path.join(gt_dir, DLRM_FILE))
    bundled = {}
    for i, rec in enumerate(recs):
        if rec.get("category", "").strip() != "2-e2e":
            continue
        row = Row("dlrm", DLRM_FILE, i + 1)
        rows.append(row)
        try:
            src = _get(rec, "source", str)
            row.group = dlrm_e2e_source_label(src)
            row.strength = rec.get("strength", "").strip()
            row.counted = row.strength == "A"
            gpu_text = _get(rec, "gpu", str)
            gpu = gpu_text.split()[0]
            gpus = _get(rec, "gpus", _pos_int)
            gb = _lead_int(rec.get("batch", "").replace(",", ""), "batch")
            prec_text = _get(rec, "precision", str)
            tset = _get(rec, "rows_per_table", str)
            sharding = _get(rec, "sharding", str)
            row.measured = _get(rec, "derived_iteration_s", _pos_float)
            row.desc = "%s x%d %s gb%d %s" % (gpu.replace("-SXM4", "").replace("-SXM", "-"),
                                              gpus, tset.split(" ")[0].split(":")[0], gb,
                                              prec_text.split(" (")[0])
        except BadRow as e:
            row.fail(str(e))
            continue
        fw = rec.get("framework", "")
        if src.startswith("NVIDIA-Merlin/HugeCTR"):
            row.skip("SOK's cyclic row-wise sharding (key %% G: all-to-all of ids, then of the "
                     "looked-up vectors) under TF2 + XLA is not modelled (%s)" % DLRM_ISSUE)
            continue
        if "UVM" in sharding:
            row.skip("tables in UVM / UVM-caching (91 GiB on a 40 GB GPU) are not modelled (%s)"
                     % DLRM_ISSUE)
            continue
        if "plan not printed" in sharding:
            row.skip("TorchRec's planner chose the plan and did not print it (%s)" % DLRM_ISSUE)
            continue
        if "not published" in tset:
            row.skip("per-table sizes not published (%s)" % tset.split(" (")[0])
            continue
        try:
            dense, bottom, ntab, dim, inter, top = dlrm_row_shape(_get(rec, "model", str))
            tables = dlrm_row_tables(tset)
            if len(tables) != ntab:
                raise BadRow("%d tables in rows_per_table, %d in model" % (len(tables), ntab))
            prec = dlrm_precision(prec_text)
            if "SGD" not in rec.get("notes", ""):
                raise BadRow("optimizer not stated as SGD in notes")
            if gb % gpus:
                raise BadRow("global batch %d over %d GPUs" % (gb, gpus))
            kind = DLRM_E2E_CLUSTERS.get(gpu)
            if not kind:
                raise BadRow("no generated cluster for GPU %r" % gpu_text)
        except BadRow as e:
            row.fail(str(e))
            continue
        name = None
        for tag, model in DLRM_TABLE_SETS:
            if tset.startswith(tag):
                name = model
        wl = None
        if name:
            if name not in bundled:
                bundled[name] = read_dlrm_model(os.path.join(repo, "workloads", "models",
                                                             name + ".yaml"))
            b = bundled[name]
            if (b["tables"] == tables and b["bottom_mlp"] == bottom and b["top_mlp"] == top
                    and b["embedding_dim"] == str(dim) and b["interaction"] == inter
                    and b["dense_features"] == str(dense) and b["pooling"] == "1"):
                wl = name
        if wl is None:
            wl = _dlrm_flow_model("dlrm-row%d" % (i + 1), dense, bottom, dim, inter, top, tables)
        text = ("workload: %s\nbatch: {global: %d, micro: %d}\nprecision: %s\noptimizer: sgd\n"
                "strategy:\n  data: {degree: %d}\n" % (wl, gb, gb // gpus, prec, gpus))
        # NVIDIA's DLRM does not fuse the tables' update into the lookup's backward: a sparse
        # gradient (one fp32 row per lookup) applied by torch.optim.SGD (`update: sparse`)
        if gpus == 1:
            text += ("  embedding: {sharding: table-wise, placement: [%s], update: sparse}\n"
                     % ", ".join("0" for _ in tables))
        else:
            if not sharding.startswith("table-wise") or "get_device_mapping" not in sharding:
                row.fail("unknown multi-GPU plan %r" % sharding[:60])
                continue
            place = nvidia_dlrm_placement(tables, gpus)
            # NVIDIA's DistributedDlrm: the bottom MLP is model-parallel on GPU 0 (whole batch)
            text += ("  embedding: {sharding: table-wise, placement: [%s], bottom_mlp_gpu: 0, "
                     "update: sparse}\n" % ", ".join(map(str, place)))
        job = Job("run", ("gen", kind[0], 1, gpus, None, None) + ((kind[1],) if kind[1] else ()),
                  [row], strategy=text)
        job.skip_unmodelled = True
        jobs.append(job)
    return rows, jobs


# ---------------------------------------------------------------- traces (issue 12)
TRACES_DIR = "traces"
_TRACE_RE = re.compile(r"^(?P<model>[a-z0-9]+)_(?:(?P<gpu>[a-z]\d{3})_)?(?P<world>\d+)rank"
                       r"(?:_rank\d+)?\.json(?:\.gz)?$")
# Files whose name does not give the GPU: the one the traces were taken on (issue 12's evidence:
# the recommendation model's ranks ran on A100s)
_TRACE_GPU = {"recsys": "a100"}


def load_traces(gt_dir, **_):
    """Each public Kineto trace replayed unchanged (`protosim replay`) on a DGX cluster of its
    GPU and world size (file name: MODEL_GPU_NrankS[_rankR].json.gz); measured: the trace's
    median ProfilerStep (the replay's measured_step_s)."""
    d = os.path.join(gt_dir, TRACES_DIR)
    rows, jobs = [], []
    for name in sorted(os.listdir(d)):
        m = _TRACE_RE.match(name)
        if not m:
            continue
        r = Row("traces", TRACES_DIR, len(rows) + 1, name, group=m.group("model"))
        rows.append(r)
        world = int(m.group("world"))
        gpu = m.group("gpu") or _TRACE_GPU.get(m.group("model"))
        kind = {"v100": "dgx-v100", "a100": "dgx-a100", "h100": "dgx-h100"}.get(gpu)
        if not kind:
            r.skip("no DGX kind for GPU %s" % gpu)
            continue
        key = ("gen", kind, max(1, (world + 7) // 8), 0, 0, 0)
        jobs.append(Job("replay", key, [r], strategy=os.path.join(d, name)))
    return rows, jobs


# ---------------------------------------------------------------- steps measured here (issue 27)
STEPS_FILES = {"h100": "H100-SXM5-80GB", "h200": "H200-SXM-141GB"}


def load_steps(gt_dir, repo=None, **_):
    """The single-GPU eager training steps scripts/gpu_measure.py timed on an H100 and an H200
    (tests/data/measured/{h100,h200}_steps.csv, in the repository: no fit reads them), each run as
    the script builds it: `kernels: eager` (PyTorch modules: nn.LayerNorm or nn.RMSNorm, which
    is one kernel: `rmsnorm_kernel: fused`), exact GELU with biases and learned positions (gpt) or
    SwiGLU and rotary without biases (llama), tied head, no dropout, SDPA flash attention
    (FlashAttention-2: `attention_kernel: warp-mma`; the `sdpa-default` row let PyTorch pick
    cuDNN's, a native kernel), bf16 weights and AdamW states (`master_weights: false`), the loss
    on the bf16 logits as the script calls it (F.cross_entropy without autocast or .float():
    `cross_entropy: logits`), one micro-batch of `batch`. Measured: step_ms (median of 8 synchronised steps, no profiler). AMP
    rows (fp32 weights cast per op under autocast) are skipped: those casts are not modelled.
    Group = GPU."""
    rows, jobs = [], []
    for gpu, device in sorted(STEPS_FILES.items()):
        name = "%s_steps.csv" % gpu
        recs = _read_dicts(os.path.join(repo, "tests", "data", "measured", name))
        for i, rec in enumerate(recs):
            row = Row("steps", name, i + 1, group=gpu)
            rows.append(row)
            try:
                model = _get(rec, "model", str)
                row.desc = "%s %s" % (gpu, model)
                row.measured = _get(rec, "step_ms", float) / 1e3
                if rec.get("error", "").strip():
                    row.skip("not measured: %s" % rec["error"].strip())
                    continue
                if _get(rec, "mode", str) != "bf16":
                    row.skip("autocast's per-op casts of fp32 weights are not modelled")
                    continue
                fam = _get(rec, "family", str)
                llama = fam == "llama"
                w = ("{family: %s, layers: %d, hidden: %d, heads: %d, kv_heads: %d, "
                     "ffn_hidden: %d, seq: %d, vocab: %d, attention: flash, "
                     "attention_kernel: %s, kernels: eager, cross_entropy: logits, "
                     "dropout: false, tied_embeddings: true%s}" % (
                         fam, _get(rec, "layers", _pos_int), _get(rec, "hidden", _pos_int),
                         _get(rec, "heads", _pos_int), _get(rec, "kv_heads", _pos_int),
                         _get(rec, "ffn", _pos_int), _get(rec, "seq", _pos_int),
                         _get(rec, "vocab", _pos_int),
                         "native" if "sdpa-default" in model else "warp-mma",
                         ", rmsnorm_kernel: fused" if llama else
                         ", positions: learned, bias: true"))
                b = _get(rec, "batch", _pos_int)
                text = ("workload: %s\nbatch: {global: %d, micro: %d}\nprecision: bf16\n"
                        "optimizer: adam\nmaster_weights: false\nstrategy:\n"
                        "  recompute: none\n" % (w, b, b))
            except BadRow as e:
                row.fail(str(e))
                continue
            jobs.append(Job("run", ("one", device), [row], strategy=text))
    return rows, jobs


# ---------------------------------------------------------------- per-op GEMM kernels (issue 28)
KERNEL_VIDUR_GPUS = {"a100": ("A100", "A100-SXM4-80GB"), "h100": ("H100", "H100-SXM5-80GB")}
KERNEL_MEASURED = {"h100": ("H100", "H100-SXM5-80GB"), "h200": ("H200", "H200-SXM-141GB")}
KERNEL_ROLES = (("attn_pre_proj", "QKV"), ("attn_post_proj", "O"), ("mlp_up_proj", "gate/up"),
                ("mlp_down_proj", "down"))
KERNEL_MODELS = ("roofline", "tile")


def vidur_gemm_shape(role, rec):
    """(k, n) of one layer GEMM's per-GPU shard [tokens x k].[k x n], as scripts/fit_tensor and
    scripts/fit_tiles derive it."""
    h, heads = _get(rec, "n_embd", _pos_int), _get(rec, "n_head", _pos_int)
    kv, ff = _get(rec, "n_kv_head", _pos_int), _get(rec, "n_expanded_embd", _pos_int)
    tp, hd = _get(rec, "num_tensor_parallel_workers", _pos_int), h // heads
    if role == "attn_pre_proj":
        return h, (heads + 2 * kv) * hd // tp
    if role == "attn_post_proj":
        return heads * hd // tp, h
    if role == "mlp_up_proj":
        return h, ff * (2 if rec.get("use_gated_mlp") == "True" else 1) // tp
    return ff // tp, h


def _kernel_rows(name, label, role, shapes, model, jobs_by_key, rows, gpu, dtype, quick):
    """One Row per (shape, measured seconds, rid, desc) of shapes under one GEMM model: the
    roofline's rows count in the summary (the simulator's default), the tile model's are
    reported beside them."""
    key = (gpu, dtype, model)
    job = jobs_by_key.get(key)
    if job is None:
        job = jobs_by_key[key] = Job("kernels", None, [])
        job.gpu, job.dtype, job.model, job.shapes = gpu, dtype, model, []
    for i, (shape, t, rid, desc) in enumerate(shapes):
        if quick and i % 20:
            continue
        row = Row("kernels", name, rid, desc=desc, group="%s %s [%s]" % (label, role, model),
                  measured=t)
        row.counted = model == "roofline"
        rows.append(row)
        job.rows.append(row)
        job.shapes.append(shape)


def load_kernels(gt_dir, repo=None, quick=False, **_):
    """Per-op GEMM kernel times beside `protosim kernel gemm --shapes` on the GPU that measured
    them, under both GEMM models (--gemm-model roofline, the default the summary counts, and
    tile, reported beside it): vidur's fp16 layer GEMMs on the A100 and H100 (the four roles of
    eight models at 1-32k tokens and TP 1-8; profiler kernel times) and the bf16 training GEMMs
    measured here on the H100 and H200 (tests/data/measured/*_gemm.csv; the square and skinny
    sweeps time Python's launch rate and are skipped, as tests/test_cost.c does). Predicted:
    the kernel's time as `protosim kernel` prints it (its work plus the 6.8 us a CUDA kernel
    costs besides it). Group = GPU, source, role and model. --quick: every 20th row."""
    rows, by_key = [], {}
    for gpu, (label, device) in sorted(KERNEL_VIDUR_GPUS.items()):
        for path in sorted(glob.glob(os.path.join(gt_dir, "vidur", "compute_%s_*_mlp.csv" % gpu))):
            name = os.path.basename(path)
            per_role = {r: [] for r, _ in KERNEL_ROLES}
            for i, rec in enumerate(_read_dicts(path)):
                for role, short in KERNEL_ROLES:
                    try:
                        m = _get(rec, "num_tokens", _pos_int)
                        k, n = vidur_gemm_shape(role, rec)
                        t = _get(rec, "time_stats.%s.median" % role, _pos_float) * 1e-3
                    except BadRow as e:
                        rows.append(Row("kernels", name, i + 1, group="%s vidur fp16 %s [roofline]" % (
                            label, short)).fail(str(e)))
                        continue
                    per_role[role].append(((m, n, k), t, i + 1, "%s %s %dx%dx%d" % (
                        name[len("compute_"):-len("_mlp.csv")], short, m, n, k)))
            for role, short in KERNEL_ROLES:
                for model in KERNEL_MODELS:
                    _kernel_rows(name, label + " vidur fp16", short, per_role[role], model, by_key,
                                 rows, device, "fp16", quick)
    for gpu, (label, device) in sorted(KERNEL_MEASURED.items()):
        name = "%s_gemm.csv" % gpu
        shapes = []
        for i, rec in enumerate(_read_dicts(os.path.join(repo, "tests", "data", "measured", name))):
            case = rec.get("case", "")
            if rec.get("dtype") != "bf16":
                continue
            if case.startswith(("square", "skinny")):
                for model in KERNEL_MODELS:
                    rows.append(Row("kernels", name, i + 1, group="%s measured bf16 [%s]" % (label, model)).skip(
                        "shape sweep: times Python's launch rate"))
                continue
            try:
                m, n, k = (_get(rec, c, _pos_int) for c in ("M", "N", "K"))
                t = _get(rec, "ms", _pos_float) * 1e-3
            except BadRow as e:
                rows.append(Row("kernels", name, i + 1, group="%s measured bf16 [roofline]" % label).fail(
                    str(e)))
                continue
            shapes.append(((m, n, k), t, i + 1, "%s %s %s %dx%dx%d" % (label, case, rec.get("layout", ""), m, n, k)))
        for model in KERNEL_MODELS:
            _kernel_rows(name, label + " measured", "bf16", shapes, model, by_key, rows, device,
                         "bf16", quick)
    return rows, list(by_key.values())


LOADERS = {"steps": load_steps, "vtrain": load_vtrain, "nccl": load_nccl, "megatron": load_megatron,
           "neusight": load_neusight, "llm": load_llm, "frontier": load_frontier,
           "traces": load_traces,
           "dlrm_kernels": load_dlrm_kernels, "dlrm": load_dlrm, "kernels": load_kernels}
