"""A signal means save, then stop: what a training run does when the cluster takes its machine back.

While training runs, the first of ``preemption.signals`` (SIGTERM, SIGINT, SIGUSR1 by default) only
takes note. The trainer finishes the current optimizer step, every rank agrees, one checkpoint is saved
(codegrpo.training.checkpoints), W&B and the logs are flushed, ``PREEMPTED`` names the checkpoint, and the
command exits with status 75 (EX_TEMPFAIL: "try again", with ``resume=auto``). A second signal, or one
outside training (while the model loads, while it evaluates), stops at once with status 128 + the
signal's number, still closing the sandbox on the way out; a third gets the signal's default action.

A handler that was installed before the run (submitit's requeue handler for SIGUSR2) is called after
the checkpoint is saved, so a SLURM job saves first and then requeues itself. Its own exit is not the
run's: the status stays 75 (a script's ``ray.init()`` leaves a SIGTERM handler that exits 15).
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from codegrpo.errors import UsageError

log = logging.getLogger(__name__)
PREEMPTED_EXIT = 75  # sysexits.h EX_TEMPFAIL
MARKER = "PREEMPTED"


class Preempted(SystemExit):
    """Training stopped on a signal after saving ``checkpoint``: exit status 75."""

    def __init__(self, signal_name: str, checkpoint: Path | None) -> None:
        super().__init__(PREEMPTED_EXIT)
        self.signal_name = signal_name
        self.checkpoint = checkpoint


class Interrupted(SystemExit):
    """Stopped at once on a signal, without saving: exit status 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signal_name = signal.Signals(signum).name

    def __str__(self) -> str:
        return f"stopped at once by {self.signal_name} (no checkpoint saved by this signal)"


def parse_signals(names: Sequence[str]) -> list[signal.Signals]:
    """preemption.signals as signals; a UsageError names a bad one before anything loads."""
    found = []
    for name in names:
        upper = str(name).upper()
        upper = upper if upper.startswith("SIG") else f"SIG{upper}"
        if upper not in signal.Signals.__members__ or upper in ("SIGKILL", "SIGSTOP"):
            raise UsageError(
                f"preemption.signals: {name!r} is not a signal that can be caught "
                "(e.g. SIGTERM, SIGINT, SIGUSR1, SIGUSR2)"
            )
        found.append(signal.Signals[upper])
    return found


class Guard:
    """Installs the handlers for the whole run; ``graceful`` is true while the trainer trains."""

    def __init__(self, signals: Sequence[signal.Signals]) -> None:
        self.signals = list(dict.fromkeys(signals))
        self.previous: dict[signal.Signals, Any] = {}
        self.graceful = False
        self.received: signal.Signals | None = None

    def __enter__(self) -> Guard:
        if threading.current_thread() is not threading.main_thread():
            log.warning("not on the main thread: a signal will not save a checkpoint")
            return self
        for sig in self.signals:
            self.previous[sig] = signal.getsignal(sig)
            signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        self.previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.graceful and self.received is None:
            self.received = signal.Signals(signum)
            log.warning(
                "%s: finishing this optimizer step, then saving a checkpoint and stopping "
                "(a second signal stops at once)",
                self.received.name,
            )
            return
        for sig in self.signals:
            signal.signal(sig, signal.SIG_DFL)
        raise Interrupted(signum)

    def chain(self) -> None:
        """Call the handler the received signal had before the run (submitit's requeue), if any."""
        if self.received is None:
            return
        handler = self.previous.get(self.received)
        if callable(handler) and handler is not signal.default_int_handler:
            try:
                handler(int(self.received), None)
            except SystemExit as exit_:  # submitit's exits after requeueing; ray.init's is sys.exit(signum)
                log.info("the handler before the run exited (%s); the run's own status is kept", exit_.code)


def write_marker(run_dir: Path, signal_name: str, checkpoint: Path | None, step: int) -> Path:
    """PREEMPTED: which signal, at which step, and the checkpoint to resume from."""
    where = checkpoint.name if checkpoint is not None else "none (no step had finished)"
    path = run_dir / MARKER
    path.write_text(
        f"{signal_name} at step {step}\ncheckpoint: {where}\n"
        f"resume: python train.py hydra.run.dir={run_dir} resume=auto <the same overrides>\n"
    )
    return path
