"""The panels of ``softrank run`` (``fastpath/capture/panels.py``): the default panel is the one
``DEFAULT_PANELS`` always gave; the full panel counts every head of the four checkpoints over eight
sources (FLAN-T5 in three regimes); ``--limit`` and ``--minilm``/``--smollm2`` cap the counts;
extraction options match."""

from __future__ import annotations

from softrank.fastpath.capture import panels
from softrank.fastpath.capture.extract import DEFAULT_PANELS


def test_default_panel_is_unchanged():
    assert panels.PANELS["default"] == {name: DEFAULT_PANELS[name] for name in panels.MODELS}
    assert panels.counts("default") == {"minilm": 64, "smollm2": 54}
    assert panels.extract_options("minilm", "default", 64, explicit=False) == {}
    assert panels.extract_options("smollm2", "default", 7, explicit=True) == {"max_operators": 7}


def test_full_panel_counts_every_head_over_eight_sources():
    assert panels.counts("full") == {"minilm": 6 * 12 * 8, "smollm2": 30 * 9 * 8, "dinov2-small": 12 * 6 * 8,
                                     "flan-t5-small": 8 * 6 * 8 * 3}
    assert panels.shape("minilm", "full") == [256, 256] and panels.shape("smollm2", "full") == [128, 128]
    assert panels.shape("dinov2-small", "full") == [257, 257]
    assert [panels.shape("flan-t5-small", "full", r) for r in panels.REGIMES] == [[64, 256], [32, 32], [256, 256]]
    assert panels.counts("full", limit=3) == {"minilm": 3, "smollm2": 3, "dinov2-small": 3, "flan-t5-small": 3}
    assert panels.counts("full", given={"minilm": 0, "smollm2": 5000, "flan-t5-small": 0}) == {
        "smollm2": 2160, "dinov2-small": 576}
    opts = panels.extract_options("smollm2", "full", 2160, explicit=False)
    assert opts == {"sources": 8, "tokens": 256, "widths": [128], "seed": 0, "max_operators": 2160}
    opts = panels.extract_options("flan-t5-small", "full", 9, explicit=True)
    assert opts == {"sources": 8, "tokens": 256, "decoder_tokens": 64, "widths": [32], "seed": 0, "max_operators": 9}


def test_plan_labels_families_as_the_tables_do():
    plan = panels.plan("full", ["0.25"], limit=2)
    assert plan == {"panel": "full", "operators": 8, "tolerances": ["0.25"],
                    "families": {"all-MiniLM-L6-v2": {"operators": 2, "shape": [256, 256]},
                                 "SmolLM2-135M": {"operators": 2, "shape": [128, 128]},
                                 "DINOv2-small": {"operators": 2, "shape": [257, 257]},
                                 "FLAN-T5-small cross": {"operators": 1, "shape": [64, 256]},
                                 "FLAN-T5-small decoder blocks": {"operators": 1, "shape": [32, 32]}}}
    assert panels.regime_counts("flan-t5-small", 8) == {"cross": 3, "decoder-self-block": 3, "encoder-self": 2}
