"""Untrusted orchestration of the theorem sanity checks (DESIGN sections 4 and 5).

Floats here only *propose* (a column term from an LP, weights, centres, gauges); every claim that
is reported as proved comes from ``softrank.validated`` (Arb balls).
"""

from __future__ import annotations

import math
import time
import zlib

import numpy as np
from flint import arb, arb_mat, ctx

from softrank.validated import kappa_certificates as kc
from softrank.validated.balls import lower_fraction, upper_fraction
from softrank.validated.outcome import Outcome
from softrank.validated.softmax_enclosure import logits_balls
from softrank.validated.softmax_perturbation import check_softmax_perturbation
from softrank.validated.tau import check_tau_bound, q_lower_cycle, tau_from_q_ball


# ----------------------------------------------------------------------------------------------
# Operators from records
# ----------------------------------------------------------------------------------------------


def logits_float(rec) -> np.ndarray:
    if rec.form == "logits":
        return np.asarray(rec.logits, dtype=np.float64)
    h = float(rec.scale) * (rec.queries @ rec.keys.T)
    return h + rec.bias if rec.bias is not None else h


def logits_balls_of(rec):
    if rec.form == "logits":
        return logits_balls(logits=rec.logits)
    return logits_balls(queries=rec.queries, keys=rec.keys, scale=rec.scale, bias=rec.bias)


def double_centre(h: np.ndarray) -> np.ndarray:
    """C = P_m H P_N in float64 (from the logits, never from log A)."""
    return h - h.mean(1, keepdims=True) - h.mean(0, keepdims=True) + h.mean()


# ----------------------------------------------------------------------------------------------
# q(E) by LP (HiGHS) and tau
# ----------------------------------------------------------------------------------------------


def q_lp(e: np.ndarray) -> tuple[float, np.ndarray]:
    """q(E) = inf_b max_i osc(E_i - b^T): returns (q, b) from HiGHS (float64, untrusted).

    Variables (b_1..b_N, lo_1..lo_m, hi_1..hi_m, t); b_1 = 0 fixes the shift freedom."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, vstack

    m, n = e.shape
    nv = n + 2 * m + 1
    ii = np.repeat(np.arange(m), n)
    jj = np.tile(np.arange(n), m)
    rows = np.arange(m * n)
    # -b_j - hi_i <= -E_ij
    a1 = coo_matrix((np.concatenate([-np.ones(m * n), -np.ones(m * n)]),
                     (np.concatenate([rows, rows]), np.concatenate([jj, n + m + ii]))), shape=(m * n, nv))
    # b_j + lo_i <= E_ij
    a2 = coo_matrix((np.concatenate([np.ones(m * n), np.ones(m * n)]),
                     (np.concatenate([rows, rows]), np.concatenate([jj, n + ii]))), shape=(m * n, nv))
    # hi_i - lo_i - t <= 0
    r3 = np.arange(m)
    a3 = coo_matrix((np.concatenate([np.ones(m), -np.ones(m), -np.ones(m)]),
                     (np.concatenate([r3, r3, r3]), np.concatenate([n + m + r3, n + r3, np.full(m, nv - 1)]))),
                    shape=(m, nv))
    a = vstack([a1, a2, a3]).tocsr()
    ub = np.concatenate([-e.ravel(), e.ravel(), np.zeros(m)])
    cost = np.zeros(nv)
    cost[-1] = 1
    bounds = [(0, 0)] + [(None, None)] * (nv - 1)
    res = linprog(cost, A_ub=a, b_ub=ub, bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"q LP failed: {res.message}")
    b = res.x[:n]
    q = float(np.max((e - b).max(1) - (e - b).min(1)))  # the value actually attained by b
    return q, b


def tau_check_record(rec, r: int) -> dict:
    """tau(T) for T the rank-r truncation of C (balanced float factors define T exactly), and the
    validated check that A lies within tau_hat of rowsoftmax(T + 1 c^T)."""
    from softrank.fastpath.kappa_sdp import balanced_factors

    t0 = time.perf_counter()
    h = logits_float(rec)
    c_mat = double_centre(h)
    x0, y0 = balanced_factors(c_mat, r)
    e = c_mat - x0 @ y0.T
    q, b = q_lp(e)
    col = h.mean(0) + b
    t_lp = time.perf_counter()
    balls = logits_balls_of(rec)
    chk = check_tau_bound(balls, x0, y0, col)
    # Validated lower bound on q (cycle lemma) from Karp's maximum-mean cycle of F = H - T.
    _, rows, cols = max_mean_cycle(h - x0 @ y0.T)
    tau_lo = tau_from_q_ball(q_lower_cycle(balls, x0, y0, rows, cols))
    tau_lower = float(lower_fraction(tau_lo)) if tau_lo.is_finite() else 0.0
    return {
        "record": rec.record_id, "m": h.shape[0], "N": h.shape[1], "r": r,
        "q_lp": q, "tau_lp": 2 * math.tanh(q / 4), "tau_hat_validated": chk.tau_hat_upper,
        "distance_validated_upper": chk.distance_upper, "outcome": chk.check.outcome.value,
        "rows_proved": chk.rows_proved, "rows": chk.rows,
        "tau_lower_validated": tau_lower, "cycle_length": len(cols),
        "tau_bracket_rel_gap": (chk.tau_hat_upper - tau_lower) / chk.tau_hat_upper if chk.tau_hat_upper > 0 else 0.0,
        # A within tau(T) of rowsoftmax(T + 1 c^T): certified distance below the certified tau lower end.
        "within_tau_certified": bool(chk.check.outcome is Outcome.PROVED and chk.distance_upper < tau_lower),
        "seconds_lp": t_lp - t0, "seconds_check": time.perf_counter() - t_lp,
    }


# ----------------------------------------------------------------------------------------------
# Softmax perturbation: random, adversarial, sharpness
# ----------------------------------------------------------------------------------------------


def _balls(v) -> list[arb]:
    return [arb(float(x)) for x in v]


def _ratio(lhs: arb, rhs: arb) -> float:
    return float((lhs / rhs).mid())


def perturbation_suite(n_random: int = 400, n_adversarial: int = 200, seed: int = 0) -> dict:
    """Random and adversarial (x, h), checked in balls; a sharpness sequence whose ratio -> 1."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(seed)
    counts = {o.value: 0 for o in Outcome}
    worst = 0.0
    cases = 0

    def run_case(x, h):
        nonlocal worst, cases
        chk, lhs, rhs = check_softmax_perturbation(_balls(x), _balls(np.asarray(x) + np.asarray(h)))
        counts[chk.outcome.value] += 1
        cases += 1
        worst = max(worst, _ratio(lhs, rhs))
        return chk

    for _ in range(n_random):
        n = int(rng.integers(2, 64))
        sx, sh = 10 ** rng.uniform(-2, 1.5), 10 ** rng.uniform(-3, 1.5)
        # x + h is formed in float; the check uses the exact float x and the exact float x + h.
        run_case(rng.standard_normal(n) * sx, rng.standard_normal(n) * sh)
    # Adversarial: start from two-group configurations and locally maximise the float ratio.
    def neg_ratio(z, n):
        x, h = z[:n], z[n:]
        osc = h.max() - h.min()
        if osc <= 1e-12:
            return 0.0
        def sm(v):
            w = np.exp(v - v.max())
            return w / w.sum()
        return -np.abs(sm(x + h) - sm(x)).sum() / (2 * math.tanh(osc / 4))

    for k in range(n_adversarial):
        n = int(rng.integers(2, 12))
        a = 10 ** rng.uniform(-1, 1.3)
        grp = rng.random(n) < 0.5
        grp[0], grp[-1] = True, False
        h = np.where(grp, a / 2, -a / 2) + rng.normal(0, 0.05 * a, n)
        x = np.where(grp, -a / 4, a / 4) + rng.normal(0, 0.3, n)
        if k % 2:
            res = minimize(neg_ratio, np.concatenate([x, h]), args=(n,), method="Nelder-Mead",
                           options={"maxiter": 400})
            x, h = res.x[:n], res.x[n:]
        run_case(x, h)
    # Sharpness: x = (-a/4 + delta, a/4), h = (a/2, -a/2): equality at delta = 0 (not certifiable),
    # ratio 1 - O(delta^2) as delta -> 0.
    seq = []
    for a in (1.0, 4.0):
        for delta in (0.5, 0.1, 0.01, 1e-3, 1e-4):
            x = np.array([-a / 4 + delta, a / 4])
            h = np.array([a / 2, -a / 2])
            chk, lhs, rhs = check_softmax_perturbation(_balls(x), _balls(x + h))
            counts[chk.outcome.value] += 1
            cases += 1
            seq.append({"a": a, "delta": delta, "ratio": _ratio(lhs, rhs), "outcome": chk.outcome.value})
    return {"cases": cases, "counts": counts, "max_ratio_random_adversarial": worst,
            "sharpness_sequence": seq, "sharpness_final_ratio": seq[-1]["ratio"]}


# ----------------------------------------------------------------------------------------------
# Gauge audit and kappa <= Gamma
# ----------------------------------------------------------------------------------------------


def random_gauges(d: int, rng) -> list[tuple[str, np.ndarray]]:
    diag = np.diag(np.exp(rng.uniform(-2, 2, d)))
    dense = rng.standard_normal((d, d)) / math.sqrt(d) + np.eye(d)
    return [("diagonal", diag), ("dense", dense)]


def _uniform_dual_lower(x0, y0) -> float:
    from softrank.fastpath.kappa_sdp import dual_lower_best

    p, q = np.full(x0.shape[0], 1.0), np.full(y0.shape[0], 1.0)
    v = dual_lower_best(x0, y0, p, q)
    return float("nan") if v is None else float(v)


def gamma_native(queries, keys, scale) -> tuple[float, float]:
    """(float Gamma from minimum enclosing balls, validated upper bound with those centres)."""
    from softrank.fastpath.kappa_sdp import chebyshev_centre

    cq, rq, _ = chebyshev_centre(queries)
    ck, rk, _ = chebyshev_centre(keys)
    return float(scale) * rq * rk, float(kc.native_gamma_upper(queries, keys, float(scale), cq, ck))


def _delta_logits_upper(q1, k1, q2, k2, scale) -> tuple[float, float]:
    """Upper bounds on max_i osc(H2_i - H1_i) and max |H2 - H1| in balls (exact products)."""
    with ctx.workprec(106):
        def h(q, k):
            return (arb_mat(q.shape[0], q.shape[1], q.ravel().tolist())
                    * arb_mat(k.shape[1], k.shape[0], np.ascontiguousarray(k.T).ravel().tolist())) * arb(float(scale))
        diff = (h(q2, k2) - h(q1, k1)).tolist()
        osc_max, abs_max = arb(0), arb(0)
        for row in diff:
            hi, lo = row[0], row[0]
            for v in row[1:]:
                hi, lo = hi.max(v), lo.min(v)
                abs_max = abs_max.max(abs(v))
            abs_max = abs_max.max(abs(row[0]))
            osc_max = osc_max.max(hi - lo)
    return float(upper_fraction(osc_max)), float(upper_fraction(abs_max))


def gauge_audit_record(rec, r: int, seed: int = 0, with_tau: bool = True) -> list[dict]:
    """For random diagonal and dense gauges S: Q' = fl(Q S), K' = fl(K S^-T).  Validated:
    ||A' - A||_inf <= 2 tanh(max osc(H' - H)/4) (perturbation lemma); |C' - C| <= 4 max|H' - H|;
    the uniform-weight kappa(C) lower bound in both frames (Lemma K1, gauge-free by construction);
    kappa lower <= Gamma upper in both frames.  Native Gamma is reported in both frames."""
    if rec.form != "qk" or rec.bias is not None:
        return []
    rng = np.random.default_rng([seed, zlib.crc32(rec.record_id.encode())])
    q, k, beta = rec.queries, rec.keys, float(rec.scale)
    g0, g0_up = gamma_native(q, k, beta)
    kap0 = _uniform_dual_lower(beta * q, k)
    tau0 = None
    if with_tau:
        from softrank.fastpath.kappa_sdp import balanced_factors

        c0 = double_centre(logits_float(rec))
        x0, y0 = balanced_factors(c0, r)
        tau0 = 2 * math.tanh(q_lp(c0 - x0 @ y0.T)[0] / 4)
    out = []
    for name, s in random_gauges(q.shape[1], rng):
        t0 = time.perf_counter()
        q2 = q @ s
        k2 = k @ np.linalg.inv(s).T
        osc_up, abs_up = _delta_logits_upper(q, k, q2, k2, beta)
        g1, g1_up = gamma_native(q2, k2, beta)
        kap1 = _uniform_dual_lower(beta * q2, k2)
        row = {
            "record": rec.record_id, "gauge": name, "cond_S": float(np.linalg.cond(s)),
            # 2 tanh(x/4) <= x/2 and x/2, 4 y are exact in binary64: both stay upper bounds.
            "A_change_validated_upper": osc_up / 2,
            "C_change_validated_upper": 4 * abs_up,
            "kappa_C_lower_frame0": kap0, "kappa_C_lower_gauged": kap1,
            "kappa_lower_rel_change": abs(kap1 - kap0) / kap0,
            "gamma_frame0": g0, "gamma_gauged": g1, "gamma_ratio": g1 / g0,
            "kappa_le_gamma_validated": bool(kap0 <= g0_up and kap1 <= g1_up),
        }
        if with_tau:
            from softrank.fastpath.kappa_sdp import balanced_factors

            c1 = double_centre(beta * (q2 @ k2.T))
            x1, y1 = balanced_factors(c1, r)
            tau1 = 2 * math.tanh(q_lp(c1 - x1 @ y1.T)[0] / 4)
            row.update({"tau_frame0": tau0, "tau_gauged": tau1, "tau_change": abs(tau1 - tau0)})
        row["seconds"] = time.perf_counter() - t0
        out.append(row)
    return out


# ----------------------------------------------------------------------------------------------
# Record selection shared by ``softrank theorem`` and ``softrank kappa``
# ----------------------------------------------------------------------------------------------


def select_records(stores: list[str], ids: str | None = None, limit: int | None = None,
                   max_n: int | None = None):
    """Records of the stores (in order), optionally only the given comma-separated ids, at most
    ``limit`` per store, skipping operators wider than ``max_n``."""
    from softrank.validated.errors import InputError
    from softrank.replay.reader import list_records, read_record

    wanted = None if ids is None else {s.strip() for s in ids.split(",") if s.strip()}
    out = []
    for store in stores:
        taken = 0
        for folder in list_records(store):
            if wanted is not None and folder.name not in wanted:
                continue
            if limit is not None and taken >= limit:
                break
            rec = read_record(folder)
            if max_n is not None and max(rec.shape) > max_n:
                continue
            out.append(rec)
            taken += 1
    if wanted is not None:
        missing = wanted - {r.record_id for r in out}
        if missing:
            raise InputError(",".join(stores), "records", f"not found: {sorted(missing)[:5]}")
    return out


def rank_list(text: str, where: str) -> list[int]:
    from softrank.validated.errors import InputError

    try:
        ranks = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise InputError(where, "rank", f"not an integer list: {text!r}") from None
    if not ranks or min(ranks) < 1:
        raise InputError(where, "rank", f"ranks must be integers >= 1, got {text!r}")
    return ranks


def write_rows_csv(path: str, rows: list[dict]) -> None:
    import csv

    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: (v if not isinstance(v, (list, dict)) else str(v)) for k, v in r.items()})


def kappa_gamma_record(rec, r: int) -> dict:
    """kappa(C) <= Gamma for the model's own factorization (validated lower bound on kappa(C), the
    better of uniform weights and the rank-r SDP's weights, against the validated upper bound on
    Gamma), and kappa(T) <= kappa_bal
    (validated SDP lower bound against the validated balanced-factor product)."""
    from softrank.fastpath.kappa_sdp import balanced_factors, bracket_kappa

    if rec.form != "qk" or rec.bias is not None:
        raise ValueError("kappa-gamma needs a record with queries and keys and no bias")
    t0 = time.perf_counter()
    beta = float(rec.scale)
    g, g_up = gamma_native(rec.queries, rec.keys, beta)
    kc_lower = _uniform_dual_lower(beta * rec.queries, rec.keys)
    x0, y0 = balanced_factors(double_centre(logits_float(rec)), r)
    br = bracket_kappa(x0, y0)
    # The rank-r SDP's weights are a (p, q) certificate for C too (Lemma K1 holds for every T).
    from softrank.fastpath.kappa_sdp import dual_lower_best

    via_t = dual_lower_best(beta * rec.queries, rec.keys, br.p, br.q)
    kc_uniform = kc_lower
    if via_t is not None:
        kc_lower = max(kc_lower, float(via_t))
    return {"record": rec.record_id, "m": rec.shape[0], "N": rec.shape[1], "r": r,
            "gamma": g, "gamma_validated_upper": g_up, "kappa_C_lower_validated": kc_lower,
            "kappa_C_lower_uniform": kc_uniform,
            "kappa_C_lower_le_gamma": bool(kc_lower <= g_up), "gamma_over_kappa_C_lower": g / kc_lower,
            "kappa_T_lower": br.lower, "kappa_T_upper": br.upper, "kappa_bal": br.kappa_bal,
            "kappa_bal_validated_upper": br.kappa_bal_upper, "kappa_T_lower_le_bal": bool(br.lower <= br.kappa_bal_upper),
            "bal_over_kappa": br.kappa_bal / br.upper, "seconds": time.perf_counter() - t0}


def max_mean_cycle(f: np.ndarray) -> tuple[float, list[int], list[int]]:
    """Karp's maximum cycle mean on the column graph with w(j, j') = max_i (F_ij - F_ij'), and one
    cycle attaining it (float64, untrusted): returns (mean, rows, cols)."""
    m, n = f.shape
    w = np.empty((n, n))
    arg = np.empty((n, n), dtype=np.int64)
    for j in range(n):
        d = f[:, [j]] - f  # d[i, j'] = F_ij - F_ij'
        arg[j] = np.argmax(d, axis=0)
        w[j] = d[arg[j], np.arange(n)]
    np.fill_diagonal(w, -np.inf)  # a self-loop has weight 0; q >= 0 anyway
    dk = np.full((n + 1, n), -np.inf)
    pred = np.zeros((n + 1, n), dtype=np.int64)
    dk[0] = 0.0
    for k in range(1, n + 1):
        cand = dk[k - 1][:, None] + w  # cand[u, v]
        pred[k] = np.argmax(cand, axis=0)
        dk[k] = cand[pred[k], np.arange(n)]
    with np.errstate(invalid="ignore"):
        ratios = (dk[n][None, :] - dk[:n]) / (n - np.arange(n))[:, None]
    ratios[~np.isfinite(ratios)] = np.inf
    lam = np.min(ratios, axis=0)
    v = int(np.argmax(lam))
    walk = [v]
    for k in range(n, 0, -1):
        walk.append(int(pred[k][walk[-1]]))
    walk = walk[::-1]  # walk[0] -> walk[1] -> ... along edges
    best = (-np.inf, [], [])
    seen: dict[int, int] = {}
    for pos, node in enumerate(walk):
        if node in seen:
            cyc = walk[seen[node]:pos]
            mean = np.mean([w[cyc[l], cyc[(l + 1) % len(cyc)]] for l in range(len(cyc))])
            if mean > best[0]:
                rows = [int(arg[cyc[l], cyc[(l + 1) % len(cyc)]]) for l in range(len(cyc))]
                best = (float(mean), rows, [int(c) for c in cyc])
        seen[node] = pos
    return best
