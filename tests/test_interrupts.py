"""A signal whose handler ran inside a finalizer still ends the wait it interrupted.

Python runs a signal's handler between two bytecodes of the main thread, wherever they are;
inside a finalizer (a freed HTTP response's close, any `__del__`) the KeyboardInterrupt it
raises is printed as "Exception ignored" and dropped. A Ctrl-C during a ten-million-object
upload to a bucket was dropped so under CI's load, and the upload went on for minutes. The
signal here is real (raise_signal runs Python's own SIGINT handler); the finalizer too."""

from __future__ import annotations

import gc
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO, flat

SCRIPT = textwrap.dedent("""
    import signal, sys, threading, time
    from concurrent.futures import Future
    from aiio import interrupts
    from aiio.phases.threads import result

    class Freed:
        def __del__(self):  # the handler runs in here, as it may in any finalizer
            signal.raise_signal(signal.SIGINT)

    def upload(seconds):
        done = Future()
        threading.Timer(seconds, done.set_result, (None,)).start()
        return done

    interrupts.install()
    Freed()  # freed at once in the main thread: the KeyboardInterrupt is dropped
    try:
        if sys.argv[1] == "slow":  # one upload of 10 s: the signal should end the wait first
            result(upload(10))
        else:  # 10 s of uploads that each end at once: the next wait should raise it
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                result(upload(0))
    except KeyboardInterrupt:
        print("ended by the signal")
        sys.exit(130)
    print("the wait went on to the uploads' end")
""")


@pytest.mark.parametrize("uploads", ["slow", "fast"])
def test_a_ctrl_c_a_finalizer_swallowed_still_ends_the_wait(uploads):
    proc = subprocess.run([sys.executable, "-c", SCRIPT, uploads], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert "Exception ignored" in proc.stderr  # Python dropped it, as it does
    assert proc.returncode == 130, proc.stderr
    assert "ended by the signal" in flat(proc.stdout)


def test_nothing_is_raised_where_no_signal_was_dropped():
    from aiio import interrupts

    interrupts.pending()  # nothing kept: returns
    gc.collect()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


CHAINED = textwrap.dedent("""
    import sys
    from aiio import interrupts

    seen = []
    sys.unraisablehook = lambda u: seen.append(type(u.exc_value).__name__)  # a tool's own

    class Broken:
        def __del__(self):
            raise ValueError("a finalizer's own error")

    interrupts.install()
    interrupts.install()  # twice (a second command in one process): still one call each
    Broken()
    print(seen)
""")


def test_the_hook_hands_on_to_the_one_it_replaced():
    # The hook in place when install() runs (a profiler's, a test runner's) still sees every
    # unraisable exception, once: it was the one in place when aiio.interrupts was imported.
    proc = subprocess.run([sys.executable, "-c", CHAINED], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['ValueError']", proc.stdout + proc.stderr


FORKED = textwrap.dedent("""
    import os, signal, sys
    from aiio import interrupts

    class Freed:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)

    interrupts.install()
    Freed()  # kept, not yet raised, when a client is forked
    pid = os.fork()
    if pid == 0:
        try:
            interrupts.pending()
        except KeyboardInterrupt:
            os._exit(3)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print("client", os.waitstatus_to_exitcode(status))
    try:
        interrupts.pending()
    except KeyboardInterrupt:
        print("parent interrupted")
""")


def test_a_client_forked_while_a_signal_is_kept_does_not_raise_it():
    # The Ctrl-C was the parent's: a client forked before the parent's next wait inherited
    # the kept exception and raised it in its own first wait, a crash of the client.
    proc = subprocess.run([sys.executable, "-c", FORKED], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.stdout.split("\n")[:2] == ["client 0", "parent interrupted"], \
        proc.stdout + proc.stderr
