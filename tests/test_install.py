"""Install as a user would: build the sdist and wheel, install the wheel into a fresh venv
outside the source tree, and run aiio from there (shipped workloads must come with it)."""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO, TINY_ARGS

# tests/test_kvcache.py's tiny model: 64 KiB blocks, a run of 1 s
KV_TINY = tuple(x for k, v in {"model": "tiny", "layers": 2, "kv_heads": 2, "head_dim": 64,
                                "block_tokens": 64, "users": 2, "context_tokens": 512,
                                "generation_tokens": 64, "duration": "1s",
                                "transfer_size": "64KiB"}.items()
                for x in ("--set", f"kvcache.{k}={v}"))
SHIPPED = ("demo.toml", "unet3d.toml", "acceptance/example.toml", "hardware/accelerators.toml")


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and the wheel built from it (python -m build builds the wheel from the sdist,
    so a file missing from the sdist is missing from the wheel too)."""
    out = tmp_path_factory.mktemp("dist")
    # Built from a copy: setuptools stages the sdist in the source folder, where anything else
    # building or writing at the same time (a parallel test, the developer) would collide.
    src = tmp_path_factory.mktemp("src") / "aiio"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".pytest_cache", ".ruff_cache", "build", "*.egg-info", "__pycache__",
        "aiio-target"))
    proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(src)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out


def _one(folder: Path, pattern: str) -> Path:
    found = list(folder.glob(pattern))
    assert len(found) == 1, found
    return found[0]


@pytest.mark.heavy  # make test-lab: many seconds of CPU (setup.cfg)
def test_sdist_holds_workloads_and_docs(dist: Path):
    with tarfile.open(_one(dist, "aiio-*.tar.gz")) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for path in SHIPPED:
        assert f"workloads/{path}" in names
    for path in ("README.md", "docs/METHOD.md", "docs/ACCEPTANCE.md", "Makefile", "setup.cfg"):
        assert path in names


@pytest.mark.heavy  # make test-lab: many seconds of CPU (setup.cfg)
def test_wheel_ships_workloads_inside_the_package(dist: Path):
    with zipfile.ZipFile(_one(dist, "aiio-*.whl")) as whl:
        names = set(whl.namelist())
    for path in SHIPPED:
        assert f"aiio/workloads/{path}" in names


def test_every_package_in_the_tree_is_packaged():
    """setup.cfg lists packages by hand (workloads/ is mapped in): a new one must be listed."""
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    listed = set(cfg["options"]["packages"].split())
    in_tree = {".".join(p.parent.relative_to(REPO).parts)
               for p in (REPO / "aiio").rglob("__init__.py")}
    assert in_tree <= listed, in_tree - listed


def _venv(where: Path) -> Path:
    """A fresh venv; the dependencies come from this interpreter's site-packages (appended,
    so the installed wheel, not the source tree, provides aiio)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    deps = sysconfig.get_paths()["purelib"]
    site = next(where.glob("lib/python*/site-packages"))
    (site / "deps.pth").write_text(deps + "\n")
    return where / "bin"


@pytest.mark.heavy  # make test-lab: many seconds of CPU (setup.cfg)
def test_installed_wheel_runs_outside_the_tree(dist: Path, tmp_path: Path):
    bin_dir = _venv(tmp_path / "venv")
    wheel = _one(dist, "aiio-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(bin_dir / "python"),
                    "install", "--quiet", "--no-deps", "--no-index", str(wheel)], check=True)
    cwd, target = tmp_path / "elsewhere", tmp_path / "target"
    cwd.mkdir()
    target.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("AIIO_WORKLOADS", "PYTHONPATH", "VIRTUAL_ENV")}
    env.update(COLUMNS="80", XDG_CONFIG_HOME=str(tmp_path / "config"))

    def aiio(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(bin_dir / "aiio"), *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=300)

    where = subprocess.run([str(bin_dir / "python"), "-c", "import aiio; print(aiio.__file__)"],
                           cwd=cwd, env=env, capture_output=True, text=True, check=True)
    assert where.stdout.startswith(str(tmp_path / "venv"))
    usage = aiio("--help")  # imports every command's module, as a user's first try does
    assert usage.returncode == 0, usage.stderr[-2000:]
    listing = aiio("workloads")
    assert listing.returncode == 0, listing.stderr
    for name in ("demo", "unet3d", "llama3-70b", "staging-randrw"):
        assert name in listing.stdout
    assert "shipped" in listing.stdout
    run = aiio("run", "--phase", "train", *TINY_ARGS, "--target", str(target),
               "--results", str(tmp_path / "reports"), "--no-history", "--no-report")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "result:" in run.stdout
    assert list((tmp_path / "reports").glob("*/result.json"))
    # the KV-cache phase, its page (latency over the run) and a table over users
    kv = aiio("run", "--phase", "kvcache", *KV_TINY, "--target", str(target), "--results",
              str(tmp_path / "kv"), "--no-history")
    assert kv.returncode == 0, kv.stderr[-2000:]
    # the verdict is the storage's, and a loaded machine's disk may be overloaded: any of
    # the three is the installed phase at work
    verdict = [line for line in kv.stdout.splitlines() if "│ verdict " in line]
    assert verdict and re.search(r"steady|not judged|overloaded", verdict[0]), kv.stdout
    assert list((tmp_path / "kv").glob("*-kvcache-*/report.html"))
    users = aiio("scale", "--phase", "kvcache", *KV_TINY, "--users", "1,2", "--duration", "1s",
                 "--clients", "1", "--target", str(target), "--results", str(tmp_path / "kv"),
                 "--no-history")
    assert users.returncode == 0, users.stderr[-2000:]
    assert "users per client" in users.stdout or "no user count" in users.stdout
