"""The three steps of ``softrank run`` as peer jobs: ``ExtractStep`` (the panel's families, or
the user's model, into ``OUT/store``), ``BracketStep`` (``BracketJob``, in place) and
``ReplayStep`` (``ReplayJob`` into ``OUT/replay``).  Each runs its items on the runner
(``softrank.fastpath.runner.run_tasks``: the extraction in this process, the others on Dask with
``--jobs`` or ``--scheduler``) and journals each finished item in ``OUT/.partial/<step>/`` with
the runner's ``Journal``; each returns plain data (its result, journaled by the pipeline) and
names the files that hold its output (``outputs``: their SHA-256 tell whether a journaled result
still stands)."""

from __future__ import annotations

import hashlib
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from softrank.replay.tolerance import Tolerance
from softrank.fastpath.capture import panels
from softrank.fastpath.runner import Journal, run_tasks
from softrank.fastpath.store.files import file_sha256
from softrank.errors import InputError


@dataclass
class Settings:
    """What a run does (``softrank run``'s arguments, checked)."""

    out: Path
    tolerances: list[Tolerance]
    jobs: int = 2
    scheduler: str | None = None
    resume: bool = False
    reuse: bool = False
    panel: str = "default"
    limit: int | None = None
    given: dict = field(default_factory=dict)  # model -> operators asked for (None: the panel's)
    device: str | None = None
    model: str | None = None  # the user's checkpoint (extracted by ``Hooks.extract_model``)

    @property
    def store(self) -> Path:
        return self.out / "store"


@dataclass
class Hooks:
    """What the front end supplies: ``say(line)`` (a rich-markup line), ``progress(label, start)``
    (a context manager yielding ``report(done, total)`` or None), ``extract_model(store)`` (the
    user's model into the store; its record ids)."""

    say: Callable[[str], None] = lambda line: None
    progress: Callable = lambda label, start: nullcontext(None)
    extract_model: Callable[[Path], list[str]] | None = None


def has_records(store: Path) -> bool:
    return (store / "records").is_dir() and any((store / "records").iterdir())


class ExtractStep:
    """Step 1: the panel's families into the store, one journal entry per family (a family cut
    short by a kill is extracted again, its records already written replaced by the same ones);
    ``--reuse`` keeps a store's records; ``--model``: the user's model, one entry."""

    name = "extract"

    def __init__(self, settings: Settings, hooks: Hooks):
        self.s, self.hooks = settings, hooks
        self.counts = panels.counts(settings.panel, settings.limit, settings.given) if settings.model is None else {}

    def params(self) -> dict:
        if self.s.model is not None:
            return {"model": self.s.model, "device": self.s.device}
        return {"panel": self.s.panel, "limit": self.s.limit, "counts": self.counts, "device": self.s.device}

    def outputs(self) -> dict:
        """The store's record names (the bracket rewrites the records, never their names)."""
        folder = self.s.store / "records"
        names = sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) if folder.is_dir() else []
        return {"records": hashlib.sha256("\n".join(names).encode()).hexdigest()}

    def check(self, resume: bool) -> None:
        """A store that already holds records is extracted into only with ``--resume``."""
        if has_records(self.s.store) and not (resume or self.s.reuse):
            raise InputError(str(self.s.store), "store", "already holds records; remove it, choose another --out, "
                                                         "or pass --reuse or --resume")

    def run(self, journal: Path, resume: bool) -> dict:
        if self.s.reuse and has_records(self.s.store):
            self.hooks.say(f"[bold]extract[/]: reusing {self.s.store}")
            return {"reused": True}
        done = Journal(journal, self.params(), resume=resume, keep=True)
        finished = done.entries()
        items = ["model"] if self.s.model is not None else list(self.counts)
        for name in items:
            if name in finished:
                self.hooks.say(f"[bold]extract[/]: {name} already extracted ({len(finished[name]['ids'])} operators)")
        todo = [name for name in items if name not in finished]
        for i, ids in run_tasks(self._extract, todo):  # in this process: one model at a time
            finished[todo[i]] = done.add(todo[i], {"ids": ids})
        return {name: finished[name] for name in items}

    def _extract(self, name: str) -> list[str]:
        if name == "model":
            return self.hooks.extract_model(self.s.store)
        explicit = self.s.given.get(name) is not None or self.s.limit is not None
        opts = panels.extract_options(name, self.s.panel, self.counts[name], explicit)
        if self.s.device is not None:
            opts["device"] = self.s.device
        extract_to_store = _extraction_api()
        with self.hooks.progress(f"extract {name}", 0) as report:
            ids = extract_to_store(panels.model_of(name), self.s.store, progress=report, **opts)
        self.hooks.say(f"[bold]extract[/]: {len(ids)} operators from {name}")
        return ids


def _extraction_api():
    try:
        from softrank.fastpath.capture.extract import extract_to_store
    except ImportError as err:  # the extraction half of the fast path is missing
        raise InputError("softrank run", "extraction",
                         f"the extraction API softrank.fastpath.capture.extract.extract_to_store is not available ({err})")
    return extract_to_store


class BracketStep:
    """Step 2: every record bracketed in place (``BracketJob``: one journal entry per record);
    the result is the bracket's rows."""

    name = "bracket"

    def __init__(self, settings: Settings, hooks: Hooks):
        self.s, self.hooks = settings, hooks

    def params(self) -> dict:
        return {"eps": [t.text for t in self.s.tolerances]}

    def outputs(self) -> dict:
        return {name: file_sha256(self.s.store / name) for name in ("bracket.csv", "index.csv", "bracket-manifest.json")}

    def run(self, journal: Path, resume: bool) -> dict:
        from softrank.fastpath.bracket.store import BracketJob

        job = BracketJob(self.s.store, None, eps_list=self.s.tolerances, resume=resume, journal=journal)
        with self.hooks.progress("bracket", job.resumed) as report:
            rows = job.execute(jobs=self.s.jobs, scheduler=self.s.scheduler, progress=report)
        return {"rows": rows}


# the replay's columns the summary reads
REPLAY_KEYS = ("record_id", "status", "eps", "validated_lower", "validated_upper", "attention")


class ReplayStep:
    """Step 3: every record replayed by the validated checker into ``OUT/replay`` (``ReplayJob``:
    one journal entry per record); the result is the summary and the columns the run's summary
    joins on."""

    name = "replay"

    def __init__(self, settings: Settings, hooks: Hooks):
        self.s, self.hooks = settings, hooks

    @property
    def folder(self) -> Path:
        return self.s.out / "replay"

    def params(self) -> dict:
        return {}

    def outputs(self) -> dict:
        from softrank.findings.replay_table import REPLAY_FILES

        return {name: file_sha256(self.folder / name) for name in REPLAY_FILES}

    def run(self, journal: Path, resume: bool) -> dict:
        from dataclasses import asdict

        from softrank.findings.replay_job import ReplayJob

        job = ReplayJob(self.s.store, self.folder, resume=resume, journal=journal)
        with self.hooks.progress("replay", job.resumed) as report:
            summary = job.execute(jobs=self.s.jobs, scheduler=self.s.scheduler, progress=report)
        return {"summary": asdict(summary), "rows": [{k: r.get(k) for k in REPLAY_KEYS} for r in job.rows]}


STEPS = (ExtractStep, BracketStep, ReplayStep)
