"""Held-out refits of the fitted constants: the rows the fit scripts print, and the table.

Each scripts/fit_* script has a --holdout-json mode that refits its constants with each source
group of its fit data left out in turn and prints one JSON object a line (ROW_KEYS):

  script, constant   the script and the constant(s) (several fitted together share a row)
  value              the value protosim uses (a number, or a string naming several)
  fitted_on          the data the value was fitted on, and its row count
  group              the source group this row holds out (a file, a device, a GPU count)
  rows               that group's rows
  in_sample_*        the group's geomean |error| and bias (geomean of predicted / measured - 1)
                     under a fit that saw it: the shipped fit when the group is part of its
                     data, else the group's own fit (then the row says "own fit" in its group)
  held_out_*         the same under the fit without the group
  refit_value        the value the held-out column used: the refit on the other groups, or the
                     constant itself where the group was never part of its data

scripts/validate --holdout runs the scripts (run_fits) and prints one table (format_table);
files no constant is fitted on are held out from all of them by construction
(end_to_end_lines). Standard library only.
"""
import csv
import itertools
import json
import math
import os
import subprocess
import sys

ROW_KEYS = ["script", "constant", "value", "fitted_on", "group", "rows", "in_sample_geomean",
            "in_sample_bias", "held_out_geomean", "held_out_bias", "refit_value"]

# (script, runs in --holdout by default, arguments given the ground-truth directory)
FITS = [
    ("fit_tensor", True, lambda gt: ["--groundtruth", gt]),
    ("fit_tiles", True, lambda gt: ["--groundtruth", gt]),
    ("fit_attention", True, lambda gt: []),
    ("fit_nccl", True, lambda gt: ["--groundtruth", gt]),
    ("fit_kernels", True, lambda gt: ["--data", os.path.join(gt, "kernels")]),
    ("fit_vtrain", False, lambda gt: ["--groundtruth", gt, "--rounds", "1", "-j", "1"]),
]
# Scripts that need Debian's python3-numpy and python3-scipy run under the system interpreter
# (the one apt installs them for), the others under the one running validate.
SYSTEM_PYTHON = {"fit_tiles": "/usr/bin/python3"}

# End-to-end files: no constant is fitted on their rows, so each is held out from every one.
END_TO_END = [
    ("megatron", "Megatron (A100, H100)"),
    ("neusight", "NeuSight fp32 end-to-end training"),
    ("llm", "public LLM training runs"),
    ("traces", "replayed profiler traces"),
    ("dlrm", "DLRM end to end"),
]

# Fitted constants no script refits, so --holdout cannot hold their data out (yet).
NOT_REFITTED = [
    "HTAE_NET_EFFICIENCY 0.89 and Hopper's nccl_launch_us, nccl_step_us, nvlink_efficiency, "
    "nvls_efficiency (topology/devices.c, per architecture): fitted against nccl_more.md's figures (scripts/nccl_more "
    "compares, fits nothing)",
    "EMB_BWD_EFF 0.50 (sim/cost/cost_embedding.c): the two H100 TBE backward rows of "
    "dlrm_public.csv (dlrm_kernels)",
]


# ---------------------------------------------------------------- used by the fit scripts
def log_stats(logs, weights=None):
    """(geomean |error|, bias) of log(predicted / measured) values, optionally weighted."""
    if weights is None:
        weights = [1.0] * len(logs)
    w = sum(weights)
    geo = math.exp(sum(abs(x) * k for x, k in zip(logs, weights)) / w) - 1
    bias = math.exp(sum(x * k for x, k in zip(logs, weights)) / w) - 1
    return geo, bias


def row(script, constant, value, fitted_on, group, rows, in_sample, held_out, refit_value):
    """One output row; in_sample and held_out are (geomean, bias) pairs or None."""
    ins = in_sample or (None, None)
    return {"script": script, "constant": constant, "value": value, "fitted_on": fitted_on,
            "group": group, "rows": rows, "in_sample_geomean": ins[0], "in_sample_bias": ins[1],
            "held_out_geomean": held_out[0], "held_out_bias": held_out[1],
            "refit_value": refit_value}


def emit(rows, out=sys.stdout):
    for r in rows:
        out.write(json.dumps(r) + "\n")
    out.flush()


def grid_search(axes, loss, stride=4):
    """The grid point of axes[0] x axes[1] x ... (ascending values) with the least loss, ties
    to the smallest values: every stride-th point of each axis first, then every point within
    stride of that coarse minimum. The loss of these fits is a mean over thousands of rows,
    smooth on the grid's scale; scripts/validate --self-test checks the search on a bowl."""
    def best(ranges):
        return min(itertools.product(*ranges),
                   key=lambda ix: (loss(tuple(ax[i] for ax, i in zip(axes, ix))), ix))
    coarse = best([sorted(set(range(0, len(ax), stride)) | {len(ax) - 1}) for ax in axes])
    fine = best([range(max(0, c - stride), min(len(ax), c + stride + 1))
                 for ax, c in zip(axes, coarse)])
    return tuple(ax[i] for ax, i in zip(axes, fine))


# ---------------------------------------------------------------- used by scripts/validate
def parse(script, text):
    """The rows of one script's --holdout-json output; ValueError on a malformed line."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        r = json.loads(line)
        missing = [k for k in ROW_KEYS if k not in r]
        if missing:
            raise ValueError("%s --holdout-json line %d: missing %s"
                             % (script, n, ", ".join(missing)))
        out.append(r)
    return out


def run_fits(repo, groundtruth, slow, jobs=1):
    """Run each fit script's --holdout-json (fit_vtrain only when slow): (rows, errors)."""
    import concurrent.futures as cf

    def one(fit):
        name, fast, args = fit
        cmd = [SYSTEM_PYTHON.get(name, sys.executable), os.path.join(repo, "scripts", name),
               "--holdout-json"] + args(groundtruth)
        try:
            p = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            return [], "%s: cannot run %s: %s" % (name, cmd[0], e.strerror)
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
            return [], "%s: %s" % (name, last)
        try:
            return parse(name, p.stdout), None
        except ValueError as e:
            return [], str(e)
    chosen = [f for f in FITS if f[1] or slow]
    rows, errors = [], []
    with cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for r, e in pool.map(one, chosen):
            rows += r
            if e:
                errors.append(e)
    return rows, errors


def _pct(x, signed=False):
    if x is None:
        return "-"
    return ("%+.1f%%" if signed else "%.1f%%") % (100 * x)


def _val(v):
    if isinstance(v, float):
        return "%.4g" % v
    return str(v)


def format_table(rows):
    """Lines of the table: one block per constant (its value and data once), a line a group."""
    head = ("group", "rows", "in sample", "bias", "held out", "bias", "refit")
    cells = []
    for r in rows:
        cells.append((r["group"], str(r["rows"]), _pct(r["in_sample_geomean"]),
                      _pct(r["in_sample_bias"], True), _pct(r["held_out_geomean"]),
                      _pct(r["held_out_bias"], True), _val(r["refit_value"])))
    width = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(head)]

    def fmt(c):
        return "  " + "  ".join(x.ljust(w) if i == 0 else x.rjust(w)
                                for i, (x, w) in enumerate(zip(c, width)))
    lines, last = [], None
    for r, c in zip(rows, cells):
        key = (r["script"], r["constant"])
        if key != last:
            if last is not None:
                lines.append("")
            lines.append("%s = %s  (%s; %s)" % (r["constant"], _val(r["value"]), r["script"],
                                                r["fitted_on"]))
            lines.append(fmt(head))
            last = key
        lines.append(fmt(c))
    return lines


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(ROW_KEYS)
        for r in rows:
            w.writerow(["" if r[k] is None else r[k] for k in ROW_KEYS])


def end_to_end_lines(geomeans):
    """One line per end-to-end file; geomeans: {file: geomean |error| or None} of this run."""
    out = []
    for name, desc in END_TO_END:
        g = geomeans.get(name)
        tail = ": geomean |error| %s in this run" % _pct(g) if g is not None else ""
        out.append("  %-8s %s: held out from every fitted constant by construction, no fit "
                   "reads it%s" % (name, desc, tail))
    return out


def self_test():
    """(name, ok) pairs: the search, the statistics and the table assembly."""
    bowl = grid_search([[0.1 * i for i in range(41)], [float(i) for i in range(17)]],
                       lambda p: (p[0] - 2.3) ** 2 + (p[1] - 13.0) ** 2)
    geo, bias = log_stats([math.log(1.1), math.log(1 / 1.1)])
    # weights 3:1 on +10% and -10% in log: bias exp((3 ln 1.1 - ln 1.1) / 4) - 1 = sqrt(1.1) - 1
    _, wbias = log_stats([math.log(1.1), -math.log(1.1)], [3.0, 1.0])
    text = "\n".join(json.dumps(r) for r in (
        row("fit_x", "C", 0.5, "d (10 rows)", "g1", 4, (0.1, -0.02), (0.12, 0.05), 0.55),
        row("fit_x", "C", 0.5, "d (10 rows)", "g2 (own fit)", 6, None, (0.2, -0.2), 0.5),
        row("fit_y", "D", "1, 2", "e (3 rows)", "h", 3, (0.01, 0.0), (0.02, 0.01), "1, 3")))
    rows = parse("fit_x", text)
    lines = format_table(rows)
    bad = False
    try:
        parse("fit_z", '{"script": "fit_z"}')
    except ValueError as e:
        bad = "missing constant" in str(e)
    return [
        ("holdout: grid search finds the bowl's minimum (2.3, 13)",
         abs(bowl[0] - 2.3) < 1e-9 and bowl[1] == 13.0),
        ("holdout: +10% and -10% -> geomean 10%, bias 0; weighted 3:1 bias sqrt(1.1) - 1",
         abs(geo - 0.1) < 1e-12 and abs(bias) < 1e-12 and abs(wbias - (1.1 ** 0.5 - 1)) < 1e-12),
        ("holdout: table has one header per constant and a line per group",
         len(lines) == 8 and lines[0] == "C = 0.5  (fit_x; d (10 rows))"
         and lines[2].split()[:7] == ["g1", "4", "10.0%", "-2.0%", "12.0%", "+5.0%", "0.55"]
         and lines[3].split()[4:8] == ["-", "-", "20.0%", "-20.0%"]
         and lines[4] == "" and lines[5] == "D = 1, 2  (fit_y; e (3 rows))"),
        ("holdout: a row missing a key is refused", bad),
        ("holdout: end-to-end lines state the geomean only when run",
         "4.3% in this run" in end_to_end_lines({"llm": 0.043})[2]
         and "in this run" not in end_to_end_lines({})[0]),
    ]
