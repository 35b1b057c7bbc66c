"""softrank: trustworthy low-rank certificates for softmax attention (the console command).

One table maps each subcommand to the module that implements it.  A module exposes
``configure(parser)`` (adds its arguments) and ``run(args) -> int`` (the exit code).  Modules are
imported only when their subcommand runs, so ``softrank replay`` never imports torch.

``softrank --version`` prints the version.  Malformed input raises ``softrank.errors.InputError``; it is printed as one line on stderr and the
exit code is 2, with no traceback; under ``--json`` stdout also gets one JSON object
``{"error": the line, "exit_code": 2}``.  Every command's ``--help`` ends with its exit codes
(``EXIT_CODES``).  A closed stdout (``softrank replay ... | head``) ends the command quietly with
exit code 141 (128 + SIGPIPE, what a program killed by the signal reports), nothing on stderr.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
import textwrap
import warnings

from softrank import __version__
from softrank.errors import InputError

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
    "theorem": ("softrank.studies.theorem.command", "sanity checks of the theory's inequalities and invariances"),
    "kappa": ("softrank.studies.theorem.kappa_command", "brackets for the intrinsic size kappa on a store"),
    "attack": ("softrank.studies.attack.command", "try to beat every validated lower end (a soundness attack)"),
    "bench": ("softrank.bench.command", "benchmarks (ratios measured in one run)"),
    "study": ("softrank.cli.study", "studies on real models: rank budgets across block widths"),
}
# subcommand -> its exit codes (the epilog of its --help; COMMON_EXIT is added to each)
EXIT_CODES: dict[str, str] = {
    "run": "0 done; 2 bad input (one line on stderr), or a record that could not be read (the others were "
           "bracketed, replayed and summarised), or OUT in use by another run; 4 stopped by a fault (a Dask "
           "cluster that failed to start, workers that kept dying, a full disk): one line, the finished work "
           "kept; --resume continues",
    "extract": "0 done; 2 bad input (a model, an argument, an output path)",
    "bracket": "0 done; 2 bad input, or a malformed record (the others were bracketed and written)",
    "demo": "0 done; 2 bad input",
    "tighten": "0 done; 2 bad input, or a record that could not be read (the others were tightened and written)",
    "replay": "0 done; 1 an outcome named in --fail-on occurred; 2 bad input, or a malformed record (the others "
              "were replayed and written); 3 a proved lower end exceeds a proved upper end (a contradiction)",
    "regress": "0 done (with --against: nothing changed); 1 a verdict or bracket changed against --against; "
               "2 bad input (a damaged table, an output over an input)",
    "report": "0 the page was written; 2 bad input (a damaged table, an output over an input)",
    "oracle": "0 decided, whatever the verdict; 2 bad input",
    "families": "0 the closure is proved; 1 it is not; 2 bad input",
    "theorem": "0 no check refuted; 1 a check was refuted; 2 bad input, or a record that could not be read",
    "kappa": "0 every lower bound validated (and below its upper bound); 1 otherwise; 2 bad input, a malformed "
             "record or a failed computation (the other records were bracketed)",
    "attack": "0 no validated lower end was beaten; 1 one was beaten by a checker-proved matrix (a soundness "
              "failure); 2 bad input, or a record that could not be read",
    "bench": "0 done; 1 the tables of two configurations differ (bench scale); 2 bad input, or a record that "
             "could not be read (left out of the timings)",
    "study": "0 done (kappa: every bound and tau check validated); 1 (kappa) an operator failed, a bound was not "
             "validated, or no operator was done; 2 bad input, or a malformed record (the others were studied)",
}
COMMON_EXIT = "130 interrupted (Ctrl-C); 141 stdout closed early (a pipe such as | head), ended quietly"


def exit_epilog(name: str) -> str:
    """The 'exit codes: ...' paragraph of a command's --help (a command missing from EXIT_CODES gets
    the codes every command has; tests/cli/test_json_flags.py requires an entry for each)."""
    codes = EXIT_CODES.get(name, "0 done; 2 bad input")
    return textwrap.fill(f"exit codes: {codes}; {COMMON_EXIT}.", width=100)


# third-party modules of the producer extra: a checker-only install lacks them
PRODUCER_MODULES = ("torch", "transformers", "gguf", "accelerate", "safetensors", "huggingface_hub", "tokenizers")
KAPPA_MODULES = ("cvxpy", "clarabel")  # the kappa study's solvers: their own extra


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
        p = sub.add_parser(name, help=help_text, description=help_text,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if name == only:  # only the chosen subcommand is imported and configured
            _module(module_name).configure(p)
        _add_exit_codes(p, exit_epilog(name))
    return parser


def _add_exit_codes(parser: argparse.ArgumentParser, codes: str) -> None:
    """Append the exit codes to the epilog of PARSER and of every subcommand under it."""
    parser.epilog = f"{parser.epilog}\n\n{codes}" if parser.epilog else codes
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
                _add_exit_codes(child, codes)


def _module(module_name: str):
    return importlib.import_module(module_name)


def _missing(command: str | None, err: ModuleNotFoundError) -> int:
    """One line for a module this install lacks: a part of softrank, or the producer's dependencies."""
    name = err.name or ""
    if name.startswith("softrank."):
        print(f"softrank {command}: error: this subcommand is not available in this build ({name} missing)",
              file=sys.stderr)
        return 2
    top = name.split(".")[0]
    if top in PRODUCER_MODULES or top in KAPPA_MODULES:
        extra = "kappa" if top in KAPPA_MODULES else "producer"
        print(f"softrank {command}: error: this command needs the {extra} extra ({name} is not installed): "
              f"pip install 'softrank[{extra}]'", file=sys.stderr)
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
        code = int(_module(COMMANDS[args.command][0]).run(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:
        return _closed_stdout()
    except ModuleNotFoundError as err:
        return _missing(args.command, err)
    except InputError as err:
        return _bad_input(args, err.one_line())
    except OSError as err:  # the file system refused (permissions, a full disk, a path that is a file)
        if err.errno == errno.EPIPE:  # stdout closed (| head): wrapped in another OSError type
            return _closed_stdout()
        return _bad_input(args, f"{err.filename or 'file system'}: {err.strerror or err}")
    except KeyboardInterrupt:
        print("softrank: interrupted", file=sys.stderr)
        return 130


def _bad_input(args, line: str) -> int:
    """Exit code 2 for a bad input: one line on stderr and, under ``--json``, also one JSON object
    ``{"error": LINE, "exit_code": 2}`` on stdout (``softrank.cli.output``)."""
    print(f"softrank {args.command}: error: {line}", file=sys.stderr)
    if getattr(args, "json", False):
        from softrank.cli.output import print_json_error

        try:
            print_json_error(line, 2)
        except BrokenPipeError:
            return _closed_stdout()
    return 2


def _closed_stdout() -> int:
    """The reader of stdout went away (``| head``): no message, no traceback at exit (the rest of
    the output goes to /dev/null), exit code 141 (128 + SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return 141


def console_main() -> None:
    """The ``softrank`` command (and ``python -m softrank``): ``main``, then the process ends
    without running native libraries' static destructors.  Once every result is written and
    flushed, a library thread still joinable at interpreter exit (seen after a HiGHS solve and a
    pyarrow read in one process, a few runs in ten under load) would otherwise abort the process
    with "terminate called without an active exception" and exit code 134 instead of the code
    ``main`` returned.  Python's own exit handlers still run first."""
    import atexit

    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed stdout: main has already chosen the code
            pass
    os._exit(code)


if __name__ == "__main__":
    console_main()
