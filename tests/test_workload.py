"""Workload TOML -> validated dataclasses: shipped files, overrides, and every kind of bad input."""

from __future__ import annotations

import pytest

from aiio.errors import ConfigError
from aiio.units import MiB, parse_duration, parse_size
from aiio.workload import load_workload, shipped_workloads


def test_every_shipped_workload_loads():
    names = shipped_workloads()
    for expected in ("demo", "unet3d", "resnet50", "cosmoflow", "dlrm"):
        assert expected in names
    for name in names:
        assert load_workload(name).name == name


def test_mlperf_figures_are_kept():
    w = load_workload("unet3d")
    assert (w.dataset.format, w.dataset.sample_size, w.dataset.sample_size_stdev) == (
        "npz", 146_600_628, 68_341_808)
    assert (w.train.batch_size, w.train.read_threads, w.train.au_goal) == (7, 4, 0.9)
    assert w.train.compute_time == {"a100": 0.636, "h100": 0.323}
    # DESIGN.md: unet3d on h100 needs 7 x 146,600,628 B / 0.323 s = about 3,030 MiB/s
    assert w.demand_mib_s() == pytest.approx(7 * 146_600_628 / MiB / 0.323)
    assert round(w.demand_mib_s()) == 3030
    r = load_workload("resnet50")
    assert (r.dataset.format, r.dataset.samples_per_file, r.train.batch_size) == (
        "tfrecord", 1251, 400)
    d = load_workload("dlrm")
    assert (d.dataset.sample_size, d.dataset.samples_per_file, d.train.batch_size) == (
        160, 4_194_304, 16_384)


def test_overrides_apply_and_are_typed():
    w = load_workload("demo", [("train", "batch_size", "8"), ("train", "transfer_size", "4MiB"),
                               ("train", "duration", "2m"), ("run", "clients", "5")])
    assert w.train.batch_size == 8 and w.train.transfer_size == 4 * MiB
    assert w.train.duration == 120.0 and w.run.clients == 5


@pytest.mark.parametrize("overrides, fragment", [
    ([("train", "batch_size", "0")], "must be at least 1"),
    ([("run", "clients", "0")], "must be at least 1"),
    ([("dataset", "sample_size", "-4")], "cannot read"),
    ([("dataset", "sample_size", "0")], "greater than 0"),
    ([("train", "bogus", "1")], "unknown key 'bogus'"),
    ([("nosuch", "x", "1")], "unknown section"),
    ([("train", "accelerator", "tpu9")], "unknown accelerator 'tpu9'"),
    ([("train", "batch_size", "100000")], "larger than the dataset"),
    ([("train", "transfer_size", "1000")], "multiple of 4 KiB"),
    ([("dataset", "format", "parquet")], "not one of"),
    ([("train", "batch_size", "2.5")], "cannot read"),
])
def test_impossible_values_are_one_line_errors(overrides, fragment):
    with pytest.raises(ConfigError) as info:
        load_workload("demo", overrides)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_a_bad_override_is_named_as_one_not_as_the_file_s_value(tmp_path):
    # `aiio run --clients 0` read "demo.toml [run].clients = 0 must be at least 1": the file
    # holds 2, and the user looked for the 0 in it
    with pytest.raises(ConfigError) as info:
        load_workload("demo", [("run", "clients", "0")])
    message = str(info.value)
    assert "override [run].clients = 0 must be at least 1" in message, message
    assert "demo.toml" not in message
    path = tmp_path / "mine.toml"  # a bad value in the file still names the file
    path.write_text("[run]\nclients = 0\n")
    with pytest.raises(ConfigError, match=r"mine\.toml \[run\]\.clients = 0"):
        load_workload(str(path), [("train", "batch_size", "2")])


def test_user_file_unknown_key_names_file_and_key(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('[dataset]\nformat = "npz"\nnum_filez = 3\n')
    with pytest.raises(ConfigError) as info:
        load_workload(str(path))
    assert str(path) in str(info.value) and "num_filez" in str(info.value)


def test_malformed_toml_names_file_and_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[train]\nbatch_size = 4\nepochs = = 2\n')
    with pytest.raises(ConfigError) as info:
        load_workload(str(path))
    assert str(path) in str(info.value) and "line 3" in str(info.value)


def test_unknown_workload_lists_shipped():
    with pytest.raises(ConfigError) as info:
        load_workload("nosuchthing")
    assert "demo" in str(info.value)


def test_units():
    assert parse_size("4k") == 4096 and parse_size("1MiB") == MiB and parse_size("1MB") == 10**6
    assert parse_size("1.5GiB") == 3 * 2**29
    assert parse_duration("500ms") == 0.5 and parse_duration("2m") == 120
    with pytest.raises(ConfigError):
        parse_size("4 furlongs")


def _own_workload(folder, name: str, description: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.toml").write_text(
        f'[workload]\nname = "{name}"\ndescription = "{description}"\n'
        '[dataset]\nnum_files = 8\nsample_size = "64KiB"\n')


def test_user_folders_are_found_and_say_where_from(tmp_path, monkeypatch):
    """AIIO_WORKLOADS, then the config folder, then the shipped ones; `aiio workloads`
    names each one's source."""
    from tests.conftest import call_cli

    env_dir, config = tmp_path / "mine", tmp_path / "config"
    _own_workload(env_dir, "nightly", "from the env folder")
    _own_workload(config / "aiio" / "workloads", "lab", "from the config folder")
    _own_workload(config / "aiio" / "workloads", "nightly", "shadowed by the env folder")
    monkeypatch.setenv("AIIO_WORKLOADS", str(env_dir))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    assert load_workload("nightly").workload.description == "from the env folder"
    assert load_workload("lab").workload.description == "from the config folder"
    assert load_workload("demo").name == "demo"  # the shipped ones stay reachable
    proc = call_cli("workloads", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    import json
    rows = {r["name"]: r for r in json.loads(proc.stdout)["datasets"]}
    assert (rows["nightly"]["source"], rows["lab"]["source"], rows["demo"]["source"]) == (
        "AIIO_WORKLOADS", "config dir", "shipped")
    assert rows["nightly"]["path"] == str(env_dir / "nightly.toml")
    text = call_cli("workloads", cwd=tmp_path).stdout
    assert "AIIO_WORKLOADS" in text and "config dir" in text and "shipped" in text


def test_unknown_workload_names_the_known_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="unknown workload 'nope'.*demo"):
        load_workload("nope")


def test_acceptance_specs_are_found_by_name(tmp_path, monkeypatch):
    """An installed aiio has no workloads/ folder in the cwd: the shipped specs (and a user's
    own, in an acceptance/ subfolder of their workload folder) are given by name."""
    from aiio.accept.spec import load_spec
    from aiio.workload import find_specs

    mine = tmp_path / "mine" / "acceptance"
    mine.mkdir(parents=True)
    (mine / "nightly.toml").write_text(
        '[spec]\nname = "nightly"\n[[check]]\nname = "t"\nphase = "train"\nworkload = "demo"\n'
        "[check.require]\nmin_au = 0.1\n")
    monkeypatch.setenv("AIIO_WORKLOADS", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)
    assert load_spec("tiny").name == "tiny"
    assert load_spec("nightly").name == "nightly"
    assert find_specs()["nightly"][0] == "AIIO_WORKLOADS"
    assert find_specs()["example"][0] == "shipped"
    with pytest.raises(ConfigError, match="unknown acceptance spec 'nope'.*tiny"):
        load_spec("nope")


def test_one_broken_workload_does_not_hide_the_others(tmp_path, monkeypatch):
    """A malformed file in a shared folder is named on stderr; the listing still shows the rest
    and exits 2, so a script notices."""
    from tests.conftest import call_cli

    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "broken.toml").write_text("this is [not toml\n")
    monkeypatch.setenv("AIIO_WORKLOADS", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    proc = call_cli("workloads", cwd=tmp_path)
    assert proc.returncode == 2
    assert "demo" in proc.stdout and "unet3d" in proc.stdout
    assert "broken.toml" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", ["org/x", "../x", ".hidden", ""])
def test_a_workload_name_that_is_no_file_name_is_refused(tmp_path, name) -> None:
    """The name names the dataset's folder, its lock file and the results' folders: 'org/x'
    failed as 'No such file or directory' once the dataset had a lock file beside it."""
    path = tmp_path / "w.toml"
    path.write_text(f'[workload]\nname = "{name}"\n')
    with pytest.raises(ConfigError, match="workload.name"):
        load_workload(str(path))
