"""The weight-space columns of the calibrated block (``c_wqk_fro``, ``c_wqk_spec``, ``c_wqk_nuc``):
per (layer, head) of a checkpoint, the Frobenius, spectral and nuclear norms of M_h = W_q,h^T W_k,h,
the bilinear form of the head's logits on the layer's input (q_h k_h^T = x W_q,h^T W_k,h x'^T
for a torch ``Linear`` weight W of shape out x in, W_q,h its head's rows).

What is left out, on purpose: the query and key biases (they add terms linear in x, not part of
the bilinear form), the logit scale 1/sqrt(d_head) (one constant per model), and rotary position
embeddings (RoPE, SmolLM2): the rotation between query and key positions is ignored, so M_h is the
form at zero relative position.  With grouped-query attention query head h reads key head
h // (heads / key heads) (``kv_head`` in the records' provenance).

The checkpoints are loaded as the producer loads them (``softrank.fastpath.capture.models.load_model``:
``minilm``, ``smollm2``, float32, on the CPU here); nothing is written into the checkout (the
producer's de-quantized GGUF cache lives under ``SOFTRANK_CACHE``, by default ~/.cache/softrank).
Each model is loaded once per process (``weight_norms`` memoises its result in memory).
"""

from __future__ import annotations

import re

import numpy as np

from softrank.errors import InputError

#: projection names (query, key) of the attention modules the producer captures
PROJECTIONS = (("query", "key"), ("q_proj", "k_proj"), ("q", "k"))
_MEMO: dict[str, dict[tuple[int, int], dict[str, float]]] = {}


def model_name(key: str) -> str:
    """The loader's name for a record's provenance ``model`` (``minilm``) or a panel label
    (``all-MiniLM-L6-v2``); anything else is passed to the loader as it is."""
    from softrank.fastpath.capture.labels import MODEL_LABELS

    by_label = {label: name for name, label in MODEL_LABELS.items()}
    return by_label.get(key, key)


def head_norms(wq: np.ndarray, wk: np.ndarray, heads: int, kv_heads: int | None = None) -> list[dict[str, float]]:
    """Norms of M_h = W_q,h^T W_k,g(h) for each query head h (W_q: heads * d x D, W_k: kv_heads * d x D,
    g(h) = h // (heads // kv_heads)).  The singular values of M_h are those of the d x d product
    R_q R_k^T of the thin QRs W_q,h^T = Q_q R_q, W_k,g^T = Q_k R_k (M_h is never formed)."""
    wq, wk = np.asarray(wq, dtype=np.float64), np.asarray(wk, dtype=np.float64)
    kv_heads = kv_heads or heads
    if heads <= 0 or kv_heads <= 0 or heads % kv_heads or wq.shape[0] % heads or wk.shape[1] != wq.shape[1]:
        raise ValueError(f"cannot split W_q {wq.shape} into {heads} heads and W_k {wk.shape} into {kv_heads}")
    d = wq.shape[0] // heads
    if wk.shape[0] != kv_heads * d:
        raise ValueError(f"W_k {wk.shape} is not {kv_heads} key heads of dimension {d}")
    group = heads // kv_heads
    r_k = [np.linalg.qr(wk[g * d:(g + 1) * d].T, mode="r") for g in range(kv_heads)]
    out = []
    for h in range(heads):
        r_q = np.linalg.qr(wq[h * d:(h + 1) * d].T, mode="r")
        sv = np.linalg.svd(r_q @ r_k[h // group].T, compute_uv=False)
        out.append({"c_wqk_fro": float(np.sqrt(np.sum(sv * sv))), "c_wqk_spec": float(sv[0]) if sv.size else 0.0,
                    "c_wqk_nuc": float(np.sum(sv))})
    return out


def _layer_of(module_name: str) -> int | None:
    found = re.findall(r"(?:^|\.)(\d+)(?:\.|$)", module_name)
    return int(found[-1]) if found else None


def model_weight_norms(model, heads: int, kv_heads: int | None = None) -> dict[tuple[int, int], dict[str, float]]:
    """``{(layer, head): norms}`` of a torch model: every module with a (query, key) pair of
    ``Linear`` children named as in ``PROJECTIONS`` and a layer index in its name (the last number
    in its dotted name, as the producer's ``provenance.module``).  Two such modules in one layer
    (e.g. self- and cross-attention) are ambiguous and refused."""
    import torch

    out: dict[tuple[int, int], dict[str, float]] = {}
    owner: dict[int, str] = {}
    for name, module in model.named_modules():
        for qn, kn in PROJECTIONS:
            q, k = getattr(module, qn, None), getattr(module, kn, None)
            if not (isinstance(q, torch.nn.Linear) and isinstance(k, torch.nn.Linear)):
                continue
            layer = _layer_of(name)
            if layer is None:
                continue
            if layer in owner:
                raise ValueError(f"two attention modules in layer {layer}: {owner[layer]}, {name}")
            owner[layer] = name
            wq = q.weight.detach().to(torch.float64).cpu().numpy()
            wk = k.weight.detach().to(torch.float64).cpu().numpy()
            for h, norms in enumerate(head_norms(wq, wk, heads, kv_heads)):
                out[(layer, h)] = norms
            break
    return out


def weight_norms(model_key: str) -> dict[tuple[int, int], dict[str, float]]:
    """``{(layer, head): {c_wqk_fro, c_wqk_spec, c_wqk_nuc}}`` of the checkpoint named by a record's
    provenance ``model`` (``minilm``, ``smollm2``) or its panel label (``all-MiniLM-L6-v2``,
    ``SmolLM2-135M``): loaded once per process with the producer's loader on the CPU."""
    name = model_name(str(model_key))
    if name not in _MEMO:
        from softrank.fastpath.capture.models import load_model

        lm = load_model(name, device="cpu")
        cfg = lm.config
        kv = getattr(cfg, "num_key_value_heads", None)
        try:
            norms = model_weight_norms(lm.model, lm.num_heads, kv if isinstance(kv, int) else None)
        except ValueError as err:
            raise InputError(name, "model", f"cannot read the per-head query and key weights: {err}")
        if not norms:
            raise InputError(name, "model", "no attention module with query and key projections found")
        _MEMO[name] = norms
    return _MEMO[name]
