"""Record corruption for the fuzz tests: a small valid store whose exact r_eps is known, and
mutations of its files (bytes, JSON values at the edges of every range, shapes, hashes, keys).

The base records are block operators (rowsoftmax of logits c within blocks, 0 across), so
r_eps(A) = p exactly (``helpers.block_rank_is_exact``): any proved lower end above p or proved
upper end below p after a mutation would be a false acceptance.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np

from helpers import block_decoder, block_logits, block_rank_is_exact, rowsoftmax_float
from softrank.fastpath.store.writer import RecordWriter

EPS = 0.25
SIZES = {"blocks3": [2, 3, 2], "blocks2": [3, 3]}
C = 9.0
EDGE_NUMBERS = [0, -1, 1, 2, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 10**30, -(2**63) - 1, 10**400,
                0.0, -0.0, 1e-320, 5e-324, 1e308, 1.7976931348623157e308, 0.5, 1 - 2**-53, 1.0 + 2**-52,
                "NaN", "Infinity", "-1/3", "1/0", "1e-5000", "1/" + "9" * 500, "", " ", "0x10", None, True,
                [], {}, [[1]], {"sha256": "0"}]


def true_rank(name: str) -> int:
    return len(SIZES[name])


def build_store(store: Path) -> dict[str, Path]:
    """Two logits records and one qk record, each with a witness and all three certificate kinds."""
    out = {}
    for name, sizes in SIZES.items():
        assert block_rank_is_exact(sizes, C, Fraction(EPS))
        h, rl, cl = block_logits(sizes, C, np.random.default_rng(len(sizes)))
        a = rowsoftmax_float(h)
        rows, w = block_decoder(rl, cl, len(sizes))
        u, s, vt = np.linalg.svd(a)
        p = len(sizes)
        with RecordWriter(store, name, {"family": "fuzz", "layer": 0, "head": p}) as wr:
            wr.set_logits(h)
            wr.set_a_hat(a)
            wr.add_tolerance(EPS, upper=(u[:, :p] * s[:p], vt[:p].T, "tsvd"),
                             lower=[{"kind": "decoder", "lower": p, "rows": rows, "W": w},
                                    {"kind": "frobenius", "lower": 1},
                                    {"kind": "projected", "lower": 1, "rows": rows, "W": np.linalg.pinv(a[rows])}],
                             float64={"lower": p, "upper": p, "verdicts": {2: "unresolved", 8: "feasible"}})
        out[name] = store / "records" / name
    rng = np.random.default_rng(7)
    q, k = rng.normal(size=(5, 3)), rng.normal(size=(6, 3))
    a = rowsoftmax_float(0.5 * q @ k.T)
    with RecordWriter(store, "qk", {"family": "fuzz"}) as wr:
        wr.set_qk(q, k, 0.5)
        wr.set_a_hat(a)
        wr.add_tolerance("1/4", upper=(a, np.eye(6), "identity"), lower=[{"kind": "frobenius", "lower": 1}])
    out["qk"] = store / "records" / "qk"
    return out


def _paths(doc, prefix=()):
    """Every (path, value) in a JSON document."""
    yield prefix, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, prefix + (i,))


def _set(doc, path, value):
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def _rehash(folder: Path, doc) -> None:
    """Make every array reference's sha256 match its (possibly altered) file again."""
    for path, value in list(_paths(doc)):
        if isinstance(value, dict) and "sha256" in value and isinstance(value.get("path"), str):
            f = folder / value["path"]
            if f.is_file():
                value["sha256"] = hashlib.sha256(f.read_bytes()).hexdigest()


def mutate(src: Path, dst: Path, draw) -> str:
    """Copy record folder SRC to DST and apply one drawn mutation; returns a label. ``draw(n)``
    returns an integer in [0, n)."""
    shutil.copytree(src, dst)
    manifest = dst / "record.json"
    doc = json.loads(manifest.read_text())
    kind = draw(6)
    if kind == 0:  # a JSON value replaced by an edge value
        paths = [p for p, _ in _paths(doc) if p]
        path = paths[draw(len(paths))]
        value = EDGE_NUMBERS[draw(len(EDGE_NUMBERS))]
        _set(doc, path, value)
        manifest.write_text(json.dumps(doc))
        return f"value {path} = {str(value)[:30]}"
    if kind == 1:  # a key removed
        paths = [p for p, v in _paths(doc) if p and isinstance(p[-1], str)]
        path = paths[draw(len(paths))]
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]
        manifest.write_text(json.dumps(doc))
        return f"removed {path}"
    arrays = sorted((dst / "arrays").glob("*.npy"))
    target = arrays[draw(len(arrays))]
    raw = bytearray(target.read_bytes())
    if kind == 2:  # bytes of an array file flipped, hash fixed or not
        for _ in range(1 + draw(4)):
            raw[draw(len(raw))] ^= 1 << draw(8)
    elif kind == 3:  # array file truncated
        raw = raw[: draw(len(raw))]
    elif kind == 4:  # array values scaled or perturbed (a well-formed but different number)
        arr = np.load(target)
        flat = arr.reshape(-1)
        if flat.size:
            i = draw(flat.size)
            if arr.dtype.kind == "f":
                flat[i] = [0, -flat[i], flat[i] * (1 + 2.0**-40), flat[i] + 1e-3, 1e300, -1e300][draw(6)]
            else:
                flat[i] = [0, -1, flat[i] + 1, 2**62, -(2**63), 10**6][draw(6)]
        import io
        buf = io.BytesIO()
        np.save(buf, arr)
        raw = bytearray(buf.getvalue())
    else:  # an array replaced by one of another shape
        arr = np.load(target)
        new = np.zeros((arr.shape[0] + 1,) + arr.shape[1:], dtype=arr.dtype) if arr.ndim else arr
        import io
        buf = io.BytesIO()
        np.save(buf, new)
        raw = bytearray(buf.getvalue())
    target.write_bytes(bytes(raw))
    if draw(4):  # usually the attacker also fixes the hash
        _rehash(dst, doc)
        manifest.write_text(json.dumps(doc))
    return f"array {target.name} kind {kind}"
