"""``F.scaled_dot_product_attention`` on the softmax route (``fastpath/capture/sdpa_route.py``):
a user's module calling sdpa is captured (form ``qk``, the mask as the record's support or bias),
every record within 1e-5 of the probabilities recomputed in float64 from the same q and k, and
A V checked against sdpa's output; dropout and an output that disagrees are refused."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import capture_records, record_block

torch = pytest.importorskip("torch")

from softrank.fastpath.capture.dispatch import CaptureWarning, capturing
from softrank.fastpath.capture.sdpa_route import _capture, call_arguments

nn, F = torch.nn, torch.nn.functional
pytestmark = pytest.mark.usefixtures("one_torch_thread")
EXACT = 1e-5
TOKENS = 40


class Plain(nn.Module):
    """A user's module (no "attention" in its name) calling sdpa; ``kv_heads`` < 4: grouped heads."""

    def __init__(self, kv_heads=4, dropout=0.0):
        super().__init__()
        torch.manual_seed(3)
        self.q = nn.Linear(32, 32)
        self.kv = nn.Linear(32, 16 * kv_heads)
        self.kv_heads, self.dropout = kv_heads, dropout

    def qkv(self, x):
        b, n, _ = x.shape
        q = self.q(x).view(b, n, 4, 8).transpose(1, 2)
        k, v = self.kv(x).view(b, n, 2, self.kv_heads, 8).permute(2, 0, 3, 1, 4)
        return q, k, v

    def forward(self, x, mask=None, causal=False):
        q, k, v = self.qkv(x)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, dropout_p=self.dropout,
                                              enable_gqa=self.kv_heads != 4)


def _reference(model, x, mask=None, causal=False):
    """float64 probabilities from the same q and k (the mask applied as sdpa does)."""
    with torch.no_grad():
        q, k, _ = model.qkv(x)
    k = k.repeat_interleave(4 // model.kv_heads, dim=1)
    h = q.double() @ k.double().transpose(-1, -2) / math.sqrt(8)
    if causal:
        h = h.masked_fill(torch.ones(TOKENS, TOKENS, dtype=torch.bool).triu(1), float("-inf"))
    if mask is not None:
        h = h.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else h + mask.double()
    return torch.softmax(h, dim=-1).numpy()


def _records(model, *args, **kwargs):
    return capture_records(model, *args, **kwargs)


X = torch.randn(2, TOKENS, 32, generator=torch.Generator().manual_seed(4))
PAD = torch.ones(2, 1, 1, TOKENS, dtype=torch.bool)
PAD[1, ..., 25:] = False
ALIBI = -0.25 * torch.arange(TOKENS, dtype=torch.float32).flip(0).expand(TOKENS, TOKENS).clone()


@pytest.mark.parametrize("case", ["full", "causal", "padding", "additive", "grouped"])
def test_sdpa_is_captured_exactly(case):
    model = Plain(kv_heads=2 if case == "grouped" else 4).eval()
    kwargs = {"causal": case == "causal"}
    if case == "padding":
        kwargs["mask"] = PAD
    if case == "additive":
        kwargs["mask"] = ALIBI.masked_fill(torch.ones(TOKENS, TOKENS, dtype=torch.bool).triu(1), float("-inf"))
    cap, recs, warned = _records(model, X, **kwargs)
    assert warned == [] and len(recs) == 2 * 4
    ref = _reference(model, X, kwargs.get("mask"), kwargs["causal"])
    for rec in recs:
        prov = rec.provenance
        assert prov["route"] == "sdpa" and rec.form == "qk" and prov["capture_max_deviation"] <= EXACT
        assert prov["capture_output_deviation"] <= prov["capture_output_tolerance"] < 1e-4
        p = record_block(ref[prov["batch_item"], prov["head"]], prov,
                         25 if case == "padding" and prov["batch_item"] == 1 else TOKENS)
        assert rec.shape == p.shape and float(np.abs(rec.a_hat - p).max()) < EXACT
    kinds = {r.provenance["attention"] for r in recs}
    assert kinds == ({"decoder-self-block"} if case in ("causal", "additive") else {"encoder-self"})
    if case == "additive":  # the finite part of the mask is the record's bias
        assert all(r.bias is not None and np.ptp(r.bias) > 0 for r in recs)
    if case == "grouped":
        assert cap.captures[0].n_rep == 2


def test_sdpa_with_dropout_is_refused():
    _, recs, warned = _records(Plain(dropout=0.1).eval(), X)
    assert recs == [] and len(warned) == 1 and "dropout_p=0.1" in warned[0] and "Plain" in warned[0]


def test_an_output_that_disagrees_is_refused():
    model = Plain().eval()
    q, k, v = model.qkv(X)
    out = F.scaled_dot_product_attention(q, k, v)
    problem, cap = _capture(call_arguments((q, k, v), {}), out, "sdpa")
    assert problem == "" and cap["checks"]["capture_output_deviation"] < 1e-6
    problem, cap = _capture(call_arguments((q, k, v), {}), out + 1e-3, "sdpa")
    assert cap is None and "differs from scaled_dot_product_attention's output" in problem
    problem, _ = _capture(call_arguments((q, k, v, torch.zeros(TOKENS, TOKENS, dtype=torch.bool)), {}), out, "sdpa")
    assert "no visible key" in problem


def test_layers_select_and_sdpa_outside_the_model_is_ignored():
    model = Plain().eval()
    q, k, v = model.qkv(X)
    with pytest.warns(CaptureWarning, match="no wanted layer ran"), capturing(model, layers={3}) as session, \
            torch.no_grad():
        F.scaled_dot_product_attention(q, k, v)  # not inside the model: passes through
        model(X)
    assert session.captures == []
    with capturing(model) as session, torch.no_grad():
        F.scaled_dot_product_attention(q, k, v)
    assert session.captures == []
