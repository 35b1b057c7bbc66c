"""softrank: trustworthy low-rank certificates for softmax attention (the console command).

One table maps each subcommand to the module that implements it.  A module exposes
``configure(parser)`` (adds its arguments) and ``run(args) -> int`` (the exit code).  Modules are
imported only when their subcommand runs, so ``softrank replay`` never imports torch.

``softrank --version`` prints the version.  Malformed input raises ``softrank.validated.errors.InputError``; it is printed as one line on stderr and the
exit code is 2, with no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

from softrank import __version__
from softrank.validated.errors import InputError

# subcommand -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("softrank.cli.run", "main job: extract from the real models, bracket, replay, summarise"),
    "extract": ("softrank.cli.extract", "capture attention operators from a model into a store"),
    "bracket": ("softrank.cli.bracket", "float64 witnesses and lower certificates for a store"),
    "demo": ("softrank.cli.demo", "build a small demonstration store (no models needed)"),
    "tighten": ("softrank.cli.tighten", "heavier search on a bracketed store: lower upper ends, grow decoders"),
    "replay": ("softrank.cli.replay", "validated replay of every certificate in a store"),
    "regress": ("softrank.cli.regress", "float64 versus validated verdict transitions for a replay table"),
    "report": ("softrank.cli.report", "one self-contained HTML report (figures and tables) of a replay"),
    "oracle": ("softrank.cli.oracle", "exact decision of a small rational cell"),
    "families": ("softrank.cli.families", "exact closure of the gauge and grid families"),
    "theorem": ("softrank.cli.theorem", "sanity checks of the theory's inequalities and invariances"),
    "kappa": ("softrank.cli.kappa", "brackets for the intrinsic size kappa on a store"),
    "attack": ("softrank.cli.attack", "try to beat every validated lower end (a soundness attack)"),
    "bench": ("softrank.cli.bench", "benchmarks (ratios measured in one run)"),
    "study": ("softrank.cli.study", "studies on real models: rank budgets across block widths"),
}
# third-party modules of the producer extra: a checker-only install lacks them
PRODUCER_MODULES = ("torch", "transformers", "gguf", "accelerate", "cvxpy", "clarabel", "safetensors",
                    "huggingface_hub", "tokenizers")


class OneLineParser(argparse.ArgumentParser):
    """argparse whose usage errors (an unknown flag, a missing argument, ``--jobs x``) are one line on
    stderr and exit code 2, like every other bad input (argparse itself prints the usage first).
    Subparsers are of this class too (``add_subparsers`` uses the parent's class)."""

    def error(self, message: str):
        one_line = " ".join(str(message).split())
        self.exit(2, f"{self.prog}: error: {one_line} (see {self.prog} --help)\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = OneLineParser(prog="softrank", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == only:  # only the chosen subcommand is imported and configured
            _module(module_name).configure(p)
    return parser


def _module(module_name: str):
    return importlib.import_module(module_name)


def _missing(command: str | None, err: ModuleNotFoundError) -> int:
    """One line for a module this install lacks: a part of softrank, or the producer's dependencies."""
    name = err.name or ""
    if name.startswith("softrank."):
        print(f"softrank {command}: error: this subcommand is not available in this build ({name} missing)",
              file=sys.stderr)
        return 2
    if name.split(".")[0] in PRODUCER_MODULES:
        print(f"softrank {command}: error: this command needs the producer ({name} is not installed): "
              "pip install 'softrank[producer]'", file=sys.stderr)
        return 2
    raise err


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in COMMANDS:
        command = None
    # Configure only the chosen subcommand, so one command's heavy imports never slow another.
    try:
        parser = build_parser(only=command)
    except ModuleNotFoundError as err:
        return _missing(command, err)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    # numpy's overflow warnings on huge stored numbers: every check treats the inf / nan it gets as
    # "not proved" (or a one-line error), so the warning itself is noise on stderr (inherited by
    # forked workers)
    warnings.filterwarnings("ignore", message=r"(overflow|invalid value) encountered in", category=RuntimeWarning)
    try:
        return int(_module(COMMANDS[args.command][0]).run(args) or 0)
    except ModuleNotFoundError as err:
        return _missing(args.command, err)
    except InputError as err:
        print(f"softrank {args.command}: error: {err.one_line()}", file=sys.stderr)
        return 2
    except OSError as err:  # the file system refused (permissions, a full disk, a path that is a file)
        where = err.filename or "file system"
        print(f"softrank {args.command}: error: {where}: {err.strerror or err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("softrank: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
