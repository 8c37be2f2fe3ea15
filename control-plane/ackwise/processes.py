"""Stopping the helper processes ackwise starts (agents, emulators) the same way everywhere, and
stopping ackwise's own long runs on SIGTERM and SIGHUP the way Ctrl-C does."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# The exit status of a command stopped by Ctrl-C, SIGTERM or SIGHUP (128 + SIGINT, as a shell has it).
EXIT_INTERRUPTED = 130


def stop_process(proc: subprocess.Popen[Any], timeout_s: float) -> None:
    """SIGTERM, so it can write its last report; SIGKILL if it has not exited after ``timeout_s``.
    A no-op for a process that already exited (it is reaped)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into KeyboardInterrupt for the duration, so that the same cleanup
    path as Ctrl-C runs."""

    def raise_interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    with _handling((signal.SIGTERM, signal.SIGHUP), raise_interrupt):
        yield


@contextmanager
def _handling(signals: Sequence[signal.Signals], handler: Callable[[int, Any], None]) -> Iterator[None]:
    """``handler`` for ``signals`` for the duration; the previous handlers come back after."""
    previous = {sig: signal.signal(sig, handler) for sig in signals}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class StopRequest:
    """A stop asked for by a signal handler, for a loop to see between its steps: ``is_set()``, and
    ``wait(timeout_s)``, a sleep that ends when it is set. Not a threading.Event: a handler runs in
    the main thread between two bytecodes, perhaps while that thread holds the Event's own lock
    (inside its wait), and Event.set would then deadlock. Setting this takes no lock: a flag, and a
    byte down a pipe that wakes the sleep (select, retried after the handler, sees it at once)."""

    def __init__(self) -> None:
        self._set = False
        self._read_fd, self._write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def set(self) -> None:
        self._set = True
        try:
            os.write(self._write_fd, b"\0")
        except BlockingIOError:
            pass  # the pipe is full of earlier wake-ups: the sleep wakes anyway

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout_s: float) -> bool:
        if not self._set:
            select.select([self._read_fd], [], [], max(timeout_s, 0.0))
        return self._set

    def close(self) -> None:
        os.close(self._read_fd)
        os.close(self._write_fd)


@contextmanager
def stop_between_steps() -> Iterator[StopRequest]:
    """For a loop whose steps must not be cut short: SIGINT, SIGTERM and SIGHUP set the stop the
    loop checks between its steps, so that the step under way ends whole. (A Thrift call cut between
    its request and its reply leaves the connection out of step: the next call reads the cut one's
    reply as its own, and its own request may be lost, e.g. the delete of a rule; a write cut after
    the switch took it is a rule the loop does not know it wrote.) A second signal raises
    KeyboardInterrupt, for a loop stuck in a call. The previous handlers come back after."""
    stop = StopRequest()

    def request_stop(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt(f"signal {signum}, the second")
        stop.set()

    try:
        with _handling((signal.SIGINT, signal.SIGTERM, signal.SIGHUP), request_stop):
            yield stop
    finally:
        stop.close()


def run_to_its_end(cmd: Sequence[str]) -> int:
    """Run a child command that cleans up on Ctrl-C (an ``ackwise`` command: run_until_stopped) and
    return its exit status. In a session of its own, so that Ctrl-C at the terminal reaches this
    process alone: here, Ctrl-C (or SIGTERM or SIGHUP, under stop_on_signals) sends the child one
    SIGINT and waits for it to exit, its test bed torn down; further interrupts while it does are
    not passed on, since a second SIGINT would cut its clean-up short. (subprocess.run killed the
    child 0.25 s after an interrupt: a run's switches, links and emulators were left behind.)"""
    child = subprocess.Popen(list(cmd), start_new_session=True)
    try:
        return child.wait()
    except KeyboardInterrupt:
        child.send_signal(signal.SIGINT)
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            print(f"{Path(cmd[0]).name}: waiting for its clean-up (pid {child.pid})", file=sys.stderr)


def run_until_stopped(name: str, main: Callable[[], int]) -> int:
    """Run a command's main with SIGTERM and SIGHUP turned into Ctrl-C: its own cleanup runs (no
    veth, switch or file left behind), and it ends with status 130 and one line naming the signal."""
    with stop_on_signals():
        try:
            return main()
        except KeyboardInterrupt as exc:
            print(f"{name}: stopped ({str(exc) or 'Ctrl-C'})", file=sys.stderr)
            return EXIT_INTERRUPTED


def run_daemon(
    name: str,
    make: Callable[[], Any],
    errors: tuple[type[BaseException], ...],
    run: Callable[[Any], None] | None = None,
) -> int:
    """The main of ackwise's daemons (the CPU-port agents, the host agent): build the daemon (an
    error of ``errors`` is one line, ``NAME: ...``, exit 2), let SIGTERM and SIGINT set its
    ``stop_requested``, run it (``run``, default its ``run()``) until it returns, exit 0."""
    try:
        daemon = make()
    except errors as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2

    def stop(*_: object) -> None:
        daemon.stop_requested = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    (run or (lambda d: d.run()))(daemon)
    return 0
