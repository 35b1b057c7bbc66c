"""``softrank regress REPLAY_DIR [--out DIR]``: float64 versus validated verdicts of a replay.

The arguments and what is printed: the transitions, ends and failures computed by the results
room (``softrank.findings.regress``) as rich tables, saved as parquet, csv and json in ``--out``
(default ``REPLAY_DIR/regress``).  Reading only: nothing here decides a verdict.

``--against BASELINE`` (another replay folder, or a baseline JSON written by ``--write-baseline``,
such as ``tests/golden/expected.json``) compares, per record and eps, the status, the validated
lower and upper ends, the witness outcome and the validated verdict at every budget, prints every
change (and every record or eps present on one side only) and exits 1 on any
(``softrank.findings.regress_baseline``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from softrank.cli.args import check_count, path_arg
from softrank.cli.paths import check_not_input, output_file, replay_tables
from softrank.cli.output import print_json
from softrank.findings.regress import FROM, VERDICTS, analyse, read_rows, save, totals
from softrank.findings.regress_baseline import changes, load_baseline, replay_baseline, write_baseline
from softrank.errors import InputError


EPILOG = """--json prints one object instead of the tables: {"verdicts" ((record, eps, k) compared),
"agree", "failures" (float64 verdicts that fail validation), "contradicted", "lower_equal", "records"
((record, eps) pairs), "tables" (the folder written), "baseline" (the file --write-baseline wrote, or
null), "against" (or null), "changes" (every change against --against, one line each; null without
it), "exit_code"}."""


def configure(parser) -> None:
    parser.add_argument("replay_dir", type=path_arg, help="folder with replay.parquet and verdicts.parquet (softrank replay --out)")
    parser.add_argument("--out", default=None, type=path_arg, help="output folder (default: REPLAY_DIR/regress)")
    parser.add_argument("--max-list", type=int, default=40, help="failures printed, >= 0 (all are saved)")
    parser.add_argument("--against", default=None, metavar="BASELINE", type=path_arg,
                        help="a replay folder or a baseline JSON: print every changed verdict or bracket, exit 1 on any")
    parser.add_argument("--write-baseline", default=None, metavar="FILE.json", type=path_arg,
                        help="write this replay's validated results as a baseline JSON (for --against)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (keys below) instead of the tables")
    parser.epilog = EPILOG


def render(tables: dict[str, list[dict]], max_list: int) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    per = defaultdict(Counter)
    for t in tables["transitions"]:
        per[(t["family"], t["eps"])][(t["float64_verdict"], t["validated_verdict"])] += t["count"]
    tab = Table(title="float64 -> validated verdicts: count of (record, budget k) per (family, eps)")
    for col in ("family", "eps", "float64"):
        tab.add_column(col, overflow="fold")
    for v in VERDICTS:
        tab.add_column(f"-> {v}", justify="right")
    for (fam, eps), c in sorted(per.items()):
        for f in FROM:
            if any(c[(f, v)] for v in VERDICTS):
                tab.add_row(fam, eps, f, *[(f"[bold]{c[(f, v)]}[/bold]" if f == v else str(c[(f, v)])) for v in VERDICTS])
    console.print(tab)
    ends = Table(title="validated ends equal to float64 ends, per (family, eps)")
    for col in ("family", "eps", "records", "lower =", "upper ="):
        ends.add_column(col, justify="right" if col not in ("family", "eps") else "left")
    for e in tables["ends"]:
        ends.add_row(e["family"], e["eps"], str(e["records"]), f"{e['lower_equal']} ({e['lower_equal_pct']:.1f}%)",
                     f"{e['upper_equal']} ({e['upper_equal_pct']:.1f}%)")
    console.print(ends)
    fails = tables["failures"]
    if fails:
        ft = Table(title=f"float64 verdicts that fail validation ({len(fails)}; first {min(len(fails), max_list)})")
        for col in ("record", "eps", "k", "float64", "validated", "reason"):
            ft.add_column(col, overflow="fold")
        for f in fails[:max_list]:
            ft.add_row(f["record_id"], f["eps"], str(f["k"]), f["float64_verdict"], f["validated_verdict"], f["reason"])
        console.print(ft)


def run(args) -> int:
    check_count(args.max_list, "max-list", minimum=0)
    if getattr(args, "write_baseline", None) is not None:  # checked before any work or output
        output_file(args.write_baseline, "write-baseline")
        check_baseline_target(args)
    folder = Path(args.replay_dir)
    if not folder.is_dir():
        raise InputError(str(folder), "", "not a folder")
    tables = analyse(read_rows(folder, "replay.parquet"), read_rows(folder, "verdicts.parquet"))
    out = Path(args.out) if args.out else folder / "regress"
    save(tables, out)
    counts = totals(tables)
    if not getattr(args, "json", False):
        render(tables, args.max_list)
        print(f"regress: {counts['verdicts']} verdicts, {counts['agree']} agree; {counts['failures']} float64 verdicts "
              f"fail validation ({counts['contradicted']} contradicted); lower ends equal on "
              f"{counts['lower_equal']}/{counts['records']} (record, eps); tables: {out}")
        return baselines(args, folder)
    code, lines = baselines(args, folder, quiet=True)
    against, written = getattr(args, "against", None), getattr(args, "write_baseline", None)
    print_json(dict(counts, tables=str(out), baseline=None if written is None else str(written),
                    against=None if against is None else str(against), changes=lines, exit_code=code))
    return code


def check_baseline_target(args) -> None:
    """``--write-baseline`` is never one of the tables read (REPLAY_DIR's, or those of an
    ``--against`` folder), nor the ``--against`` file itself (it is written before that is read)."""
    inputs = replay_tables(args.replay_dir)
    against = getattr(args, "against", None)
    if against is not None:
        inputs += replay_tables(against) if Path(against).is_dir() else [(against, f"the --against baseline {against}")]
    check_not_input(args.write_baseline, "write-baseline", inside=inputs)


def baselines(args, folder: Path, quiet: bool = False):
    """``--write-baseline`` and ``--against``: 1 when the replay differs from the baseline.  With
    ``quiet`` nothing is printed and the result is (exit code, the change lines or None)."""
    against, write = getattr(args, "against", None), getattr(args, "write_baseline", None)
    if against is None and write is None:
        return (0, None) if quiet else 0
    current = replay_baseline(folder)
    if write is not None:
        check_baseline_target(args)  # over an input table or the --against file: refused (checked first in run)
        write_baseline(current, write)
        if not quiet:
            print(f"regress: baseline of {len(current['records'])} records written to {write}")
    if against is None:
        return (0, None) if quiet else 0
    lines = changes(load_baseline(against), current)
    if quiet:
        return (1 if lines else 0), lines
    for line in lines:
        print(f"CHANGED {line}")
    print(f"regress against {against}: {len(lines)} change{'s' if len(lines) != 1 else ''} "
          f"({len(current['records'])} records compared)")
    return 1 if lines else 0
