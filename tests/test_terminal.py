"""Terminal output that fits: every command's output at 80 columns (not a terminal) has no
line wider than 80 and no cell cut to an ellipsis; no escape codes when piped."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO, TINY_ARGS, WHOLE_LINES, run_cli

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")

NARROW = {"COLUMNS": "80"}
SMALL = ("--set", "dataset.num_files=24", "--set", "dataset.sample_size=64KiB",
         "--set", "dataset.files_per_dir=10", "--batch-size", "2")
ELLIPSIS = "\u2026"


def _only(results: Path, kind: str) -> Path:
    return sorted(p for p in results.iterdir() if f"-{kind}-" in p.name)[-1]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, str]:
    """Every command run once at 80 columns; name -> stdout and stderr together."""
    base = tmp_path_factory.mktemp("narrow")
    target, results = base / "target", base / "reports"
    target.mkdir()
    # relative paths, as a user types them, so file names fit on their line
    where = ("--target", "target", "--results", "reports")
    # one run prints the line naming its page; the others draw none (a second of CPU each,
    # and the page is not what this checks)
    unpaged = (*where, "--no-report")
    runs = {
        "workloads": ("workloads",),
        "workloads --wide": ("workloads", "--wide"),
        "run train": ("run", "--phase", "train", *where, *TINY_ARGS),
        "run prep": ("run", "--phase", "prep", *unpaged, *TINY_ARGS, "--set", "prep.threads=1",
                     "--set", "prep.shard_size=256KiB"),
        "run checkpoint": ("run", "--phase", "checkpoint", *unpaged, "--clients", "2",
                           "--set", "checkpoint.size=4MiB"),
        "run load": ("run", "--phase", "load", *unpaged, "--clients", "2", "--set",
                     "load.size=4MiB", "--set", "load.files=2"),
        "fio": ("fio", *where, "--clients", "2", "--runtime", "300ms", "--ramp-time", "0",
                "--size", "8MiB"),
        "scale": ("scale", "--phase", "train", "--clients", "1,2", *unpaged, *SMALL,
                  "--duration", "1s", "--no-charts"),
        "accept": ("accept", str(REPO / "workloads" / "acceptance" / "tiny.toml"), *unpaged),
        "size": ("size", "--model", "llama3-70b", "--tokens", "2T", "--days", "30"),
        "datagen": ("datagen", "--target", "target", *SMALL),
    }
    out = {}
    for name, args in runs.items():
        proc = run_cli(*args, env=NARROW, cwd=base)
        assert proc.returncode in (0, 1), f"{name}: {proc.stderr[-2000:]}"
        out[name] = proc.stdout + proc.stderr
    train = _only(results, "train").relative_to(base)
    later = {"compare": ("compare", str(train)), "history": ("history", "--results",
                                                              "reports"),
             "report": ("report", str(train)), "clean": ("clean", "--target", "target")}
    for name, args in later.items():
        proc = run_cli(*args, env=NARROW, cwd=base)
        assert proc.returncode == 0, f"{name}: {proc.stderr[-2000:]}"
        out[name] = proc.stdout + proc.stderr
    return out


def test_every_command_fits_80_columns(outputs: dict[str, str]):
    problems = []
    for name, text in outputs.items():
        for line in text.splitlines():
            if len(line) > 80 and not line.startswith(WHOLE_LINES):  # whole, to be pasted
                problems.append(f"{name}: {len(line)} columns: {line!r}")
            if ELLIPSIS in line:
                problems.append(f"{name}: cut cell: {line!r}")
    assert not problems, "\n".join(problems[:40])


def test_piped_output_has_no_escape_codes(outputs: dict[str, str]):
    for name, text in outputs.items():
        assert "\x1b[" not in text, name


def _escape_codes(text: str) -> list[str]:
    import re
    return re.findall(r"\x1b\[[0-9;]*m", text)


@pytest.mark.mpi
def test_under_mpi_piped_output_is_plain_and_drawn_once(tmp_path):
    """Open MPI gives every rank a pseudo-terminal even when mpiexec's output is a pipe: the
    escape codes must not follow it into the pipe, and only rank 0 prints."""

    from tests.mpi import WHY_NOT, launch, mpi_env, mpiexec_cmd
    if WHY_NOT:
        pytest.skip(WHY_NOT)
    proc = launch(mpiexec_cmd(2, "workloads"), mpi_env(), 120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not _escape_codes(proc.stdout), proc.stdout[:400]
    assert proc.stdout.count("model workloads") == 1


def _on_a_terminal(*args: str, **env: str) -> str:
    from tests.terminal import run_on_terminal

    shown, code = run_on_terminal(args, REPO, COLUMNS="120", **env)
    assert code == 0, shown[-2000:]
    return shown


def test_colour_on_a_terminal_unless_no_color():
    coloured = _on_a_terminal("workloads")
    assert _escape_codes(coloured)
    plain = _on_a_terminal("workloads", NO_COLOR="1")
    colours = [c for c in _escape_codes(plain) if any(f";{n}" in c or f"[{n}" in c
                                                      for n in range(30, 48))]
    assert not colours
