"""The model's name as tables and the report label its operators (torch-free).

``softrank run`` and ``softrank report`` group operators by this label: the two shipped
checkpoints by their names (``all-MiniLM-L6-v2``, ``SmolLM2-135M``, ``DINOv2-small``; FLAN-T5-small per
attention regime: ``FLAN-T5-small encoder``, ``... cross``, ``... decoder blocks``), any other model by the last
component of the name it was given (a checkpoint folder's name, a ``.gguf`` file's stem, a hub
id's name, a config's ``_name_or_path``).  The label is derived from the record's provenance
``model``; records are not changed by it.  Records of other producers (synthetic, demo) keep
their ``family``.
"""

from __future__ import annotations

import re

MODEL_LABELS = {"minilm": "all-MiniLM-L6-v2", "smollm2": "SmolLM2-135M", "dinov2-small": "DINOv2-small",
                "flan-t5-small": "FLAN-T5-small"}
# encoder-decoder checkpoints whose tables keep each attention regime apart (provenance ``attention``)
REGIME_LABELS = {"encoder-self": "encoder", "cross": "cross", "decoder-self-block": "decoder blocks"}
SPLIT_BY_REGIME = ("flan-t5-small",)
CAPTURE_PRODUCERS = ("softrank.fastpath.extract", "softrank.capture")


def model_label(model: str) -> str:
    """``minilm`` -> ``all-MiniLM-L6-v2``, ``/ckpt/tiny-llama/`` -> ``tiny-llama``, ``org/name`` -> ``name``."""
    if model in MODEL_LABELS:
        return MODEL_LABELS[model]
    last = re.split(r"[/\\]", str(model).rstrip("/\\"))[-1]
    return re.sub(r"\.gguf$", "", last) or str(model)


def record_label(provenance: dict) -> str:
    """The label of a record's operator: its model's name for captured records, else its family."""
    producer = str(provenance.get("producer", ""))
    model = provenance.get("model")
    if producer.startswith(CAPTURE_PRODUCERS) and isinstance(model, str) and model:
        regime = REGIME_LABELS.get(str(provenance.get("attention"))) if model in SPLIT_BY_REGIME else None
        return f"{model_label(model)} {regime}" if regime else model_label(model)
    return str(provenance.get("family", ""))
