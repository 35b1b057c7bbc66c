"""One JSON printer: every command's ``--json`` output goes through ``softrank.cli.output``
(``print_json``).  No other module of the package prints JSON text to stdout itself: a ``print``
(without ``file=``) or a ``sys.stdout.write`` whose arguments call ``json.dumps`` or
``json_text``, or a ``json.dump(..., sys.stdout)``.  Read with ``ast``, tests aside."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRINTER = Path("cli") / "output.py"
JSON_TEXT = {"dumps", "json_text"}  # calls whose result is a JSON text


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _is_stdout(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "stdout"


def _prints_json(call: ast.Call) -> bool:
    """Does CALL write JSON text to stdout?"""
    name = _name(call.func)
    if name == "dump":  # json.dump(obj, sys.stdout)
        return any(_is_stdout(a) for a in call.args[1:2]) or any(
            k.arg == "fp" and _is_stdout(k.value) for k in call.keywords)
    to_stdout = (name == "print" and all(k.arg != "file" or _is_stdout(k.value) for k in call.keywords)) or (
        name == "write" and isinstance(call.func, ast.Attribute) and _is_stdout(call.func.value))
    if not to_stdout:
        return False
    return any(isinstance(n, ast.Call) and _name(n.func) in JSON_TEXT
               for a in [*call.args, *(k.value for k in call.keywords)] for n in ast.walk(a))


def hand_printed_json(root: Path) -> list[str]:
    """``path:line`` of every call outside the printer's module that prints JSON text to stdout."""
    found = []
    for file in sorted(root.rglob("*.py")):
        rel = file.relative_to(root)
        if rel == PRINTER or any(p in ("tests", "build") or p.startswith(".") for p in rel.parts[:-1]):
            continue
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"), filename=str(file))):
            if isinstance(node, ast.Call) and _prints_json(node):
                found.append(f"{rel.as_posix()}:{node.lineno}")
    return found


def test_every_json_output_goes_through_the_printer():
    assert (ROOT / PRINTER).is_file()
    assert hand_printed_json(ROOT) == []


def test_the_printer_itself_is_found_when_it_is_not_the_printer(tmp_path):
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "output.py").write_text((ROOT / PRINTER).read_text(encoding="utf-8"))
    assert hand_printed_json(tmp_path) == []
    (tmp_path / "cli" / "other.py").write_text((ROOT / PRINTER).read_text(encoding="utf-8"))
    assert hand_printed_json(tmp_path) and all(f.startswith("cli/other.py:") for f in hand_printed_json(tmp_path))


def test_a_planted_hand_printed_json_is_caught(tmp_path):
    clean = ("import json, sys\nfrom softrank.cli.output import print_json\n"
             "def f(out, args, fh):\n    print_json(out)\n    print(json.dumps(out), file=sys.stderr)\n"
             "    fh.write(json.dumps(out))\n    json.dump(out, fh)\n    text = json.dumps(out)\n"
             "    print('plain')\n")
    planted = [
        "print(json.dumps(out))",
        "print(json.dumps(out, indent=2), flush=True)",
        "print(json.dumps(out) if args.json else 'x')",
        "print(json_text(out))",
        "print('{}'.format(json.dumps(out)))",
        "sys.stdout.write(json.dumps(out) + '\\n')",
        "json.dump(out, sys.stdout)",
        "print(json.dumps(out), file=sys.stdout)",
    ]
    for i, line in enumerate(planted):
        folder = tmp_path / str(i) / "bench"
        folder.mkdir(parents=True)
        (folder / "clean.py").write_text(clean)
        assert hand_printed_json(tmp_path / str(i)) == []
        (folder / "sneaky.py").write_text(f"import json, sys\ndef g(out, args):\n    {line}\n")
        assert hand_printed_json(tmp_path / str(i)) == ["bench/sneaky.py:3"], line
