"""The panels of ``softrank run`` (``fastpath/capture/panels.py``): the default panel is the one
``DEFAULT_PANELS`` always gave; the full panel counts every head of the four checkpoints over eight
sources (FLAN-T5 in three regimes), SmolLM2's native causal operators beside its blocks; ``--limit`` and ``--minilm``/``--smollm2`` cap the counts;
extraction options match."""

from __future__ import annotations

from softrank.fastpath.capture import panels
from softrank.fastpath.capture.extract import DEFAULT_PANELS


def test_default_panel_is_unchanged_and_adds_the_native_operators():
    assert {name: panels.PANELS["default"][name] for name in panels.MODELS} == {
        name: DEFAULT_PANELS[name] for name in panels.MODELS}
    assert panels.counts("default") == {"minilm": 64, "smollm2": 54, "smollm2-native": 54}
    assert panels.extract_options("minilm", "default", 64, explicit=False) == {}
    assert panels.extract_options("smollm2", "default", 7, explicit=True) == {"max_operators": 7}
    # the native operators: the same sources and seed (so the same (layer, head) pairs), 128-token passes
    assert panels.model_of("smollm2-native") == "smollm2" and panels.model_of("smollm2") == "smollm2"
    assert panels.extract_options("smollm2-native", "default", 54, explicit=False) == {
        "sources": 6, "tokens": 128, "widths": None, "seed": 0, "operators": "native", "max_operators": 54}
    assert panels.shape("smollm2-native", "default") == [128, 128]
    assert panels.counts("default", given={"minilm": None, "smollm2": 0}) == {"minilm": 64}


def test_full_panel_counts_every_head_over_eight_sources():
    assert panels.counts("full") == {"minilm": 6 * 12 * 8, "smollm2": 30 * 9 * 8, "smollm2-native": 30 * 9 * 8,
                                     "dinov2-small": 12 * 6 * 8, "flan-t5-small": 8 * 6 * 8 * 3}
    assert panels.shape("minilm", "full") == [256, 256] and panels.shape("smollm2", "full") == [128, 128]
    assert panels.shape("dinov2-small", "full") == [257, 257]
    assert [panels.shape("flan-t5-small", "full", r) for r in panels.REGIMES] == [[64, 256], [32, 32], [256, 256]]
    assert panels.counts("full", limit=3) == {"minilm": 3, "smollm2": 3, "smollm2-native": 3, "dinov2-small": 3,
                                              "flan-t5-small": 3}
    assert panels.counts("full", given={"minilm": 0, "smollm2": 5000, "flan-t5-small": 0}) == {
        "smollm2": 2160, "smollm2-native": 2160, "dinov2-small": 576}
    opts = panels.extract_options("smollm2", "full", 2160, explicit=False)
    assert opts == {"sources": 8, "tokens": 256, "widths": [128], "seed": 0, "max_operators": 2160}
    opts = panels.extract_options("smollm2-native", "full", 2160, explicit=False)
    assert opts == {"sources": 8, "tokens": 128, "operators": "native", "seed": 0, "max_operators": 2160}
    opts = panels.extract_options("flan-t5-small", "full", 9, explicit=True)
    assert opts == {"sources": 8, "tokens": 256, "decoder_tokens": 64, "widths": [32], "seed": 0, "max_operators": 9}


def test_plan_labels_families_as_the_tables_do():
    plan = panels.plan("full", ["0.25"], limit=2)
    assert plan == {"panel": "full", "operators": 10, "tolerances": ["0.25"],
                    "families": {"all-MiniLM-L6-v2": {"operators": 2, "shape": [256, 256]},
                                 "SmolLM2-135M (decoder-self-block)": {"operators": 2, "shape": [128, 128]},
                                 "SmolLM2-135M (decoder-self)": {"operators": 2, "shape": [128, 128]},
                                 "DINOv2-small": {"operators": 2, "shape": [257, 257]},
                                 "FLAN-T5-small cross": {"operators": 1, "shape": [64, 256]},
                                 "FLAN-T5-small decoder blocks": {"operators": 1, "shape": [32, 32]}}}
    alone = panels.plan("full", ["0.25"], limit=2, given={"smollm2": 0})  # --smollm2 0: no blocks, no native
    assert alone["operators"] == 6 and "SmolLM2-135M" not in str(alone["families"])
    assert panels.regime_counts("flan-t5-small", 8) == {"cross": 3, "decoder-self-block": 3, "encoder-self": 2}
