"""Capture on CUDA against capture on the CPU, for a machine with a GPU (not a test module: the
default suite runs where there is none).

    python tests/device/cuda_capture.py OUT_DIR [--tokens 256] [--operators 8]

For each model type below (built from its transformers config at a realistic shape, random
weights, saved with ``save_pretrained``), the same operators are extracted with ``device="cpu"``
and ``device="cuda"``; the script records per type: the record ids of each (must be equal), the
refusals (warnings) of each, each record's ``capture_max_deviation`` (rowsoftmax of the record
against the model's own probabilities on that device) and the largest entry difference between the
CPU and the CUDA operator, and the seconds of each extraction.  The CUDA store of the first type is
then bracketed at eps 0.25 and replayed by the validated checker.  Output: OUT_DIR/cuda_capture.json.
Exit 1 when an id set differs, a CUDA record is refused that the CPU kept, or the replay proves
less than every witness.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
import transformers


def _models() -> dict:
    """name -> (build, vision): realistic shapes (MiniLM's, SmolLM2's heads), few layers."""
    T = transformers
    return {
        "bert-minilm-shape": (lambda: T.BertModel(T.BertConfig(
            vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
            intermediate_size=1536, max_position_embeddings=512,
            initializer_range=0.1)), False),  # peaked attention: brackets above rank 1
        "llama-smollm2-shape": (lambda: T.LlamaModel(T.LlamaConfig(
            vocab_size=49152, hidden_size=576, num_hidden_layers=4, num_attention_heads=9,
            num_key_value_heads=3, intermediate_size=1536, max_position_embeddings=2048)), False),
        "llama-bfloat16": (lambda: T.LlamaModel(T.LlamaConfig(
            vocab_size=49152, hidden_size=576, num_hidden_layers=2, num_attention_heads=9,
            num_key_value_heads=3, intermediate_size=1536, max_position_embeddings=2048)).to(torch.bfloat16),
            False),
        "gpt2": (lambda: T.GPT2Model(T.GPT2Config(vocab_size=50257, n_embd=256, n_layer=4, n_head=4,
                                                   n_positions=1024)), False),
        "qwen2": (lambda: T.Qwen2Model(T.Qwen2Config(
            vocab_size=4096, hidden_size=256, num_hidden_layers=3, num_attention_heads=8,
            num_key_value_heads=2, intermediate_size=512, max_position_embeddings=2048)), False),
        "t5": (lambda: T.T5ForConditionalGeneration(T.T5Config(
            vocab_size=4096, d_model=256, d_kv=32, d_ff=512, num_layers=2, num_decoder_layers=2,
            num_heads=8)), False),
        "vit": (lambda: T.ViTModel(T.ViTConfig(image_size=224, patch_size=16, hidden_size=384,
                                               num_hidden_layers=3, num_attention_heads=6,
                                               intermediate_size=768)), True),
    }


def _extract(path: Path, store: Path, device: str, args) -> dict:
    from softrank.fastpath.capture.extract import extract_to_store

    opts = {"sources": 2, "max_operators": args.operators, "seed": 0, "device": device}
    opts["tokens"] = args.tokens
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ids = extract_to_store(str(path), store, progress=False, **opts)
    if device == "cuda":
        torch.cuda.synchronize()  # (extract_to_store copies to host; the sync only makes the time plain)
    return {"ids": sorted(ids), "seconds": round(time.perf_counter() - t0, 3),
            "warnings": sorted({str(w.message)[:240] for w in caught})}


def _compare(cpu_store: Path, cuda_store: Path, ids: list[str]) -> dict:
    from softrank.replay.reader import read_record

    worst_diff, dev = 0.0, {"cpu": 0.0, "cuda": 0.0}
    devices = set()
    for rid in ids:
        a = read_record(cpu_store / "records" / rid)
        b = read_record(cuda_store / "records" / rid)
        worst_diff = max(worst_diff, float(np.abs(a.a_hat - b.a_hat).max()))
        dev["cpu"] = max(dev["cpu"], float(a.provenance.get("capture_max_deviation") or 0.0))
        dev["cuda"] = max(dev["cuda"], float(b.provenance.get("capture_max_deviation") or 0.0))
        devices.add(str(b.provenance.get("device")))
    return {"max_entry_difference_cpu_vs_cuda": worst_diff, "capture_max_deviation": dev,
            "cuda_record_devices": sorted(devices)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--operators", type=int, default=8)
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--second", default="cuda", help="the device compared with the CPU (cpu: a dry run)")
    args = ap.parse_args()
    if args.second == "cuda" and not torch.cuda.is_available():
        print("cuda_capture: no CUDA device", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {"gpu": torch.cuda.get_device_name(0) if args.second == "cuda" else None, "torch": torch.__version__,
              "transformers": transformers.__version__, "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
              "models": {}}
    failed = []
    only = {s for s in args.only.split(",") if s}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        first_cuda_store = None
        for name, (build, vision) in _models().items():
            if only and name not in only:
                continue
            torch.manual_seed(0)
            path = tmp / name
            build().eval().save_pretrained(path)
            row: dict = {}
            try:
                row["cpu"] = _extract(path, tmp / f"{name}-cpu", "cpu", args)
                row["cuda"] = _extract(path, tmp / f"{name}-cuda", args.second, args)
            except Exception as exc:  # recorded, the other types go on
                row["error"] = f"{type(exc).__name__}: {exc}"[:400]
                failed.append(f"{name}: {row['error']}")
                result["models"][name] = row
                print(name, row["error"], flush=True)
                continue
            same = row["cpu"]["ids"] == row["cuda"]["ids"]
            row["same_ids"] = same
            row["operators"] = len(row["cuda"]["ids"])
            if not same:
                failed.append(f"{name}: record ids differ between cpu and cuda")
            common = sorted(set(row["cpu"]["ids"]) & set(row["cuda"]["ids"]))
            row.update(_compare(tmp / f"{name}-cpu", tmp / f"{name}-cuda", common))
            result["models"][name] = row
            print(name, json.dumps({k: v for k, v in row.items() if k not in ("cpu", "cuda")}),
                  "cpu s", row["cpu"]["seconds"], "cuda s", row["cuda"]["seconds"], flush=True)
            if first_cuda_store is None and row["operators"]:
                first_cuda_store = (name, tmp / f"{name}-cuda")
        if first_cuda_store is not None:
            from softrank.findings.replay_job import replay_store
            from softrank.fastpath.bracket.store import bracket_store

            name, store = first_cuda_store
            t0 = time.perf_counter()
            rows = bracket_store(store, eps_list=(0.25,), jobs=1)
            summary = replay_store(store, tmp / "replay")
            result["chain"] = {"model": name, "tolerances": summary.tolerances, "upper_proved": summary.upper_proved,
                               "lower_rejected": summary.lower_rejected, "malformed": summary.malformed,
                               "agree": [summary.upper_agree, summary.lower_agree],
                               "brackets": [[r["lower"], r["upper"]] for r in rows],
                               "seconds": round(time.perf_counter() - t0, 2)}
            if summary.upper_proved != summary.tolerances or summary.lower_rejected or summary.malformed:
                failed.append("the validated replay of the CUDA store did not prove every witness")
    result["failed"] = failed
    (out / "cuda_capture.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({"failed": failed, "chain": result.get("chain")}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
