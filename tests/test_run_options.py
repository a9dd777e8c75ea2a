"""Run options (--verify, the space check, S3 access): one typed value from the command line
or an acceptance spec to the phases, recorded in results as they always were."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiio.accept.run import load_spec
from aiio.errors import ConfigError
from aiio.options import Access, RunOptions

CHECK = """[spec]
name = "t"

[[check]]
name = "a"
phase = "train"
workload = "demo"

[check.options]
{options}

[check.require]
min_au = 0.5
"""


def _spec(tmp_path: Path, options: str) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(CHECK.format(options=options))
    return path


def test_spec_options_become_typed_options(tmp_path):
    spec = load_spec(_spec(tmp_path, "verify = true"))
    assert spec.checks[0].options == RunOptions(verify=True)


@pytest.mark.parametrize("options, words", [
    ("verfiy = true", "unknown key 'verfiy'"),
    ('verify = "yes"', "verify must be true or false"),
    ('s3 = {endpoint = "http://x:9000", region = "eu"}', "unknown key 'region'"),
])
def test_bad_spec_options_are_one_line_errors(tmp_path, options, words):
    with pytest.raises(ConfigError) as exc:
        load_spec(_spec(tmp_path, options))
    assert words in str(exc.value) and "'a'" in str(exc.value)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("options, recorded", [
    (RunOptions(), {}),
    (RunOptions(verify=True), {"verify": True}),
    (RunOptions(space_check=False), {"space_check": False}),
    (RunOptions(s3=Access("http://h:9000", None)),
     {"s3": {"endpoint": "http://h:9000", "profile": None}}),
])
def test_results_record_only_what_was_given(options, recorded):
    assert options.to_dict() == recorded
