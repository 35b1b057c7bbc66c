"""How the golden store in this folder was made (kept for provenance; tests never run it).

    python tests/golden/make_golden.py SOURCE_STORE NEW_STORE
    softrank replay NEW_STORE --out REPLAY --quiet
    softrank regress REPLAY --write-baseline tests/golden/expected.json

SOURCE_STORE is the default panel of ``softrank run`` (extracted, bracketed): nine SmolLM2-135M
common-prefix blocks at N = 128 and the three smallest all-MiniLM-L6-v2 records are copied as they
are; four synthetic operators come from ``softrank.fastpath.demo.build_demo_store`` (24 x 24, seed
7); ten records come from the soundness corpus (accepted, rejected and one malformed record).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "soundness" / "certificates"
PANEL = [
    "smollm2-argparse.0-L05-H01-blk128", "smollm2-argparse.0-L13-H05-blk128", "smollm2-csv.0-L05-H08-blk128",
    "smollm2-csv.0-L20-H06-blk128", "smollm2-difflib.2-L17-H05-blk128", "smollm2-enum.2-L11-H07-blk128",
    "smollm2-operator.0-L11-H01-blk128", "smollm2-urllib.parse.3-L00-H03-blk128",
    "smollm2-urllib.parse.3-L18-H07-blk128",
    "minilm-operator.0-L05-H11-self", "minilm-json.2-L05-H01-self", "minilm-dataclasses.0-L05-H05-self",
]
FROM_CORPUS = [
    "accept/accept-00", "accept/accept-01", "accept/accept-02", "accept/accept-03",
    "reject/reject-just-over-00", "reject/reject-other-operator", "reject/reject-perturbed-0",
    "reject/reject-tampered-a-hat", "reject/reject-unknown-kind-0", "malformed/bad-hash-mismatch",
]


def make(source: Path, store: Path) -> None:
    from softrank.fastpath.demo import build_demo_store
    from softrank.fastpath.store.writer import write_index

    (store / "records").mkdir(parents=True)
    for rid in PANEL:
        shutil.copytree(source / "records" / rid, store / "records" / rid)
    for name in FROM_CORPUS:
        part, rid = name.split("/")
        shutil.copytree(CORPUS / part / "records" / rid, store / "records" / rid)
    build_demo_store(store, 4, 24, seed=7)
    write_index(store)


if __name__ == "__main__":
    make(Path(sys.argv[1]), Path(sys.argv[2]))
