"""One progress style for every command: a rich bar on stderr, or nothing."""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Callable, Iterator


@contextmanager
def progress(on: bool, total: int, label: str, start: int = 0) -> Iterator[Callable[[int], None]]:
    """``with progress(on, total, label) as update: update(done)``; a rich bar on stderr (items done,
    rate per minute, elapsed and remaining time), or nothing.  ``start`` items count as done already
    (a resumed run) and do not enter the rate."""
    if not on or total <= 0:
        yield lambda done: None
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), _rate_column(),
                  TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(label, total=total, completed=start)
        yield lambda done: bar.update(task, completed=done)


def _rate_column():
    """A rich column: items per minute since the bar started (blank until measured)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task) -> Text:
            speed = task.finished_speed or task.speed
            return Text("" if speed is None else f"{60 * speed:,.1f}/min", style="progress.data.speed")

    return RateColumn()


class StageBars:
    """``report(stage, done, total)``: one progress bar per stage, the previous one closed first."""

    def __init__(self):
        self.stage, self.stack, self.update = None, ExitStack(), None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage:
            self.stack.close()
            self.stage, self.update = stage, self.stack.enter_context(progress(True, total, stage))
        self.update(done)

    def close(self) -> None:
        self.stack.close()
