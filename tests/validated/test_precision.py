"""validated/precision.py: every check's working precision is named once and set only through
``working_precision``, which restores flint's precision on exit and on an exception; no product
module assigns a precision or calls ``workprec`` itself (read with ``ast``, with planted cases)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
from flint import arb, ctx

from softrank.oracle import families
from softrank.validated import kappa_certificates, softmax_enclosure, softmax_perturbation, tau
from softrank.validated.precision import PRECISION, working_precision

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("validated", "exact", "oracle", "replay", "studies", "fastpath")  # the trusted core, the studies, the producer
HOME = ROOT / "validated" / "precision.py"


def test_named_precisions_are_the_bits_used_before():
    assert dict(PRECISION) == {"enclosure": 80, "singular_values": 128, "perturbation": 128, "kappa": 106,
                               "gauge": 106, "ball_end_points": 256, "exp_constants": 300, "exp_reduction": 200,
                               "families": 128, "families_display": 64}
    with pytest.raises(TypeError):
        PRECISION["enclosure"] = 53  # read-only


def test_restores_on_exit_and_on_exception():
    with ctx.workprec(61):
        with working_precision("enclosure"):
            assert ctx.prec == 80
            assert not (arb(1) + arb(2) ** -190).is_exact()
            with working_precision(200):
                assert ctx.prec == 200
                assert (arb(1) + arb(2) ** -190).is_exact()  # the bits are really in force
            assert ctx.prec == 80
        assert ctx.prec == 61
        with pytest.raises(ZeroDivisionError):
            with working_precision("kappa"):
                assert ctx.prec == 106
                1 / 0
        assert ctx.prec == 61


def test_unknown_name_is_refused():
    with ctx.workprec(61):
        with pytest.raises(KeyError, match="enclosur"):
            with working_precision("enclosur"):
                pass
        with pytest.raises(KeyError):
            working_precision(80.0)  # bits are an int
        assert ctx.prec == 61


def test_prec_bits_arguments_default_to_the_named_precision():
    defaults = [(softmax_enclosure.rowsoftmax_enclosure, "prec_bits", "enclosure"),
                (softmax_perturbation.check_softmax_perturbation, "prec_bits", "perturbation"),
                (tau.tau_from_q_ball, "prec_bits", "perturbation"),
                (kappa_certificates.radius_upper, "prec_bits", "kappa"),
                (families.grid_s_ball, "prec", "families")]
    for fn, arg, name in defaults:
        assert inspect.signature(fn).parameters[arg].default == PRECISION[name], fn.__name__


def precision_faults(source: str) -> list[str]:
    """Where ``source`` sets a precision other than through a named ``working_precision``: an
    assignment to ``.prec`` or ``.dps``, a ``workprec`` / ``workdps`` call, a literal number of bits
    passed to ``working_precision``, or a name that PRECISION does not hold."""
    faults = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        faults += [f"line {node.lineno}: assigns .{t.attr}" for t in targets
                   if isinstance(t, ast.Attribute) and t.attr in ("prec", "dps")]
        if isinstance(node, ast.Call):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if func in ("workprec", "workdps"):
                faults.append(f"line {node.lineno}: calls {func}")
            if func == "working_precision" and node.args and isinstance(node.args[0], ast.Constant):
                value = node.args[0].value
                if not isinstance(value, str) or value not in PRECISION:
                    faults.append(f"line {node.lineno}: working_precision({value!r})")
        if isinstance(node, ast.Subscript) and getattr(node.value, "id", "") == "PRECISION" \
                and isinstance(node.slice, ast.Constant) and node.slice.value not in PRECISION:
            faults.append(f"line {node.lineno}: PRECISION[{node.slice.value!r}]")
    return faults


def test_the_checker_finds_planted_cases():
    planted = ("from flint import ctx\nimport mpmath\n"
               "ctx.prec = 64\nctx.prec += 1\nmpmath.mp.dps = 30\n"
               "with ctx.workprec(200):\n    pass\nwith mpmath.workprec(300):\n    pass\n"
               "with working_precision(300):\n    pass\nwith working_precision('enclosur'):\n    pass\n"
               "bits = PRECISION['kapa']\n")
    assert len(precision_faults(planted)) == 8
    clean = ("with working_precision('enclosure'):\n    x = ctx.prec\n"
             "with working_precision(max(ctx.prec, PRECISION['ball_end_points'])):\n    pass\n"
             "def f(prec_bits=PRECISION['kappa']):\n    with working_precision(prec_bits):\n        pass\n")
    assert precision_faults(clean) == []


def test_no_module_sets_a_precision_outside_precision_py():
    files = [f for d in SCANNED for f in sorted((ROOT / d).rglob("*.py")) if f != HOME]
    assert len(files) > 50
    faults = {str(f.relative_to(ROOT)): precision_faults(f.read_text(encoding="utf-8")) for f in files}
    assert {f: v for f, v in faults.items() if v} == {}


def test_every_named_precision_is_used():
    used = set()
    for d in SCANNED:
        for f in (ROOT / d).rglob("*.py"):
            if f != HOME:
                used |= {n.value for n in ast.walk(ast.parse(f.read_text(encoding="utf-8")))
                         if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert set(PRECISION) <= used
