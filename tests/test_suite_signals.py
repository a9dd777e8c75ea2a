"""The suite itself: what it hands the processes it starts."""

from __future__ import annotations

import signal
import subprocess
import sys

from tests.conftest import REPO

CHILD_CHECK = '''
import signal, subprocess, sys

def test_a_started_process_can_be_interrupted():
    code = "import signal; print(signal.getsignal(signal.SIGINT) == signal.default_int_handler)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert out.strip() == "True"
'''


def test_ctrl_c_reaches_the_processes_a_backgrounded_suite_starts(tmp_path):
    """A suite started in the background of a script (`make test &`) inherits SIGINT ignored,
    and so would every aiio it starts: the Ctrl-C tests then saw aiio ignore the signal and
    finish with 0. The suite gives its processes SIGINT back."""
    (tmp_path / "test_child.py").write_text(CHILD_CHECK)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "--rootdir", str(tmp_path),
         "-p", "no:cacheprovider", str(tmp_path / "test_child.py")],
        cwd=REPO, capture_output=True, text=True, timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
