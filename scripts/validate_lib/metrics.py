"""Accuracy metrics used by scripts/validate (standard library only).

error      = predicted / measured - 1 (signed relative error)
geomean    = geometric mean of max(|error|, floor), floor 1e-4 so an exact row does not zero it
percentile = linear interpolation between closest ranks (numpy's default, 'linear')
kendall_tau_b = Kendall rank correlation with the tau-b tie correction
"""
import math

GEOMEAN_FLOOR = 1e-4


def rel_error(measured, predicted):
    return predicted / measured - 1.0


def geomean_abs(errors, floor=GEOMEAN_FLOOR):
    """Geometric mean of |e| floored at `floor`; None for an empty list."""
    if not errors:
        return None
    return math.exp(sum(math.log(max(abs(e), floor)) for e in errors) / len(errors))


def percentile(values, q):
    """q-th percentile (0..100) with linear interpolation; None for an empty list."""
    if not values:
        return None
    v = sorted(values)
    if len(v) == 1:
        return v[0]
    pos = (len(v) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def kendall_tau_b(x, y):
    """Kendall tau-b of paired samples; None if fewer than 2 pairs or one side is all ties."""
    n = len(x)
    if n != len(y):
        raise ValueError("kendall_tau_b: x and y differ in length")
    if n < 2:
        return None
    conc = disc = tie_x = tie_y = 0
    for i in range(n - 1):
        xi, yi = x[i], y[i]
        for j in range(i + 1, n):
            dx = (x[j] > xi) - (x[j] < xi)
            dy = (y[j] > yi) - (y[j] < yi)
            if dx == 0:
                tie_x += 1
            if dy == 0:
                tie_y += 1
            s = dx * dy
            if s > 0:
                conc += 1
            elif s < 0:
                disc += 1
    n0 = n * (n - 1) // 2
    denom = math.sqrt((n0 - tie_x) * (n0 - tie_y))
    if denom == 0:
        return None
    return (conc - disc) / denom


def group_taus(groups, min_rows=3):
    """Tau-b per group of (measured, predicted) pairs with >= min_rows rows.

    Returns a list of (group, tau), skipping groups where tau is undefined."""
    out = []
    for g, pairs in groups.items():
        if len(pairs) < min_rows:
            continue
        t = kendall_tau_b([p[0] for p in pairs], [p[1] for p in pairs])
        if t is not None:
            out.append((g, t))
    return out


def self_test():
    """Returns (passed, failed, messages)."""
    cases = []

    def check(name, got, want, tol=1e-12):
        ok = (got is None and want is None) or (
            got is not None and want is not None and abs(got - want) <= tol)
        cases.append((name, ok, got, want))

    # Kendall tau-b, no ties: 6 concordant, 4 discordant pairs of 10 -> 0.2
    check("tau-b no ties", kendall_tau_b([1, 2, 3, 4, 5], [3, 4, 1, 2, 5]), 0.2)
    # with ties on both sides (the scipy.stats.kendalltau documentation example)
    check("tau-b ties", kendall_tau_b([12, 2, 1, 12, 2], [1, 4, 7, 1, 0]),
          -0.47140452079103173)
    check("tau-b perfect", kendall_tau_b([1, 2, 3], [10, 20, 30]), 1.0)
    check("tau-b reversed", kendall_tau_b([1, 2, 3], [3, 2, 1]), -1.0)
    check("tau-b constant is undefined", kendall_tau_b([1, 1, 1], [1, 2, 3]), None)
    check("geomean", geomean_abs([0.1, -0.4]), 0.2)
    check("geomean floor", geomean_abs([0.0, 0.01]), 1e-3)
    check("geomean empty", geomean_abs([]), None)
    check("median even", percentile([4, 1, 3, 2], 50), 2.5)
    check("p90 linear", percentile(list(range(1, 11)), 90), 9.1)
    check("p0/p100", percentile([5, 3, 9], 0) + percentile([5, 3, 9], 100), 12)
    check("rel error", rel_error(2.0, 2.5), 0.25)
    taus = group_taus({"a": [(1, 1), (2, 2), (3, 3)], "b": [(1, 2), (2, 1)]})
    check("group_taus skips small groups", float(len(taus)), 1.0)
    passed = sum(1 for c in cases if c[1])
    msgs = ["%s %s: got %r, want %r" % ("ok  " if ok else "FAIL", n, g, w)
            for n, ok, g, w in cases]
    return passed, len(cases) - passed, msgs
