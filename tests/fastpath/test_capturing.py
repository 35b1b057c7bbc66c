"""``softrank.capture`` as a new user meets it (``api/capturing.py``): a decode step over a
key-value cache is refused with a warning, each forward pass of a block is its own source,
``name=`` labels the model, and bad arguments (widths, heads, layers, a tolerance not validated)
are ``InputError``s naming the argument and what exists."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import softrank
from softrank.fastpath.capture.dispatch import CaptureWarning
from softrank.errors import InputError

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def gpt2():
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=97, n_embd=16, n_layer=2, n_head=4, n_positions=64)
    return transformers.GPT2LMHeadModel(config).eval()


def test_a_decode_step_is_refused_with_a_warning(gpt2):
    ids = torch.randint(0, 97, (1, 20))
    with pytest.warns(CaptureWarning, match="decode step over a key-value cache"):
        with softrank.capture(gpt2) as cap:
            gpt2.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False,
                          pad_token_id=0)
    assert cap.refused and all("decode step" in reason for _, reason in cap.refused)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        records = cap.records(heads=[0])
    assert records and {r.shape for r in records} == {(10, 10)}  # the prompt's pass only: 20 tokens, N = 10
    assert all(r.provenance["attention"] == "decoder-self-block" and "-c1" not in r.record_id for r in records)


def test_each_pass_is_its_own_source(gpt2):
    ids = torch.randint(0, 97, (1, 12))
    with softrank.capture(gpt2, name="my-gpt2") as cap:
        gpt2(input_ids=ids)
        gpt2(input_ids=ids)
    records = cap.records(heads=[1])
    assert len(records) == 4  # 2 passes x 2 layers
    sources = [r.provenance["source_id"] for r in records]
    assert len(set(sources)) == 2 and sum(s.endswith("-pass1") for s in sources) == 2
    assert len({r.record_id for r in records}) == 4 and not any("-c1" in r.record_id for r in records)
    assert {r.provenance["model"] for r in records} == {"my-gpt2"}
    assert all(r.record_id.startswith("my-gpt2-") for r in records)


def test_bad_widths_heads_layers_and_tolerances(gpt2):
    with softrank.capture(gpt2) as cap:
        gpt2(input_ids=torch.randint(0, 97, (1, 12)))
    with pytest.raises(InputError, match="'widths'.*positive"):
        cap.records(widths=[0])
    with pytest.raises(InputError, match=r"'heads'.*head 9 does not exist.*4 heads \(0\.\.3\)"):
        cap.records(heads=[9])
    with pytest.raises(InputError, match=r"'layers'.*layer 7 does not exist.*0\.\.1"):
        with softrank.capture(gpt2, layers=[7]):
            pass
    result = softrank.validate(softrank.bracket(cap.records(heads=[0], widths=[4])[0], eps=[0.25]))
    with pytest.raises(InputError, match=r"'eps'.*0\.3.*validated are: 0\.25") as err:
        result[0.3]
    assert isinstance(err.value, KeyError) and "\n" not in str(err.value)
