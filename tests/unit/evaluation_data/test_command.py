"""``python -m evaluation_data <set>``: one command that runs the set's builder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation_data.__main__ import BUILDERS, main


def test_the_set_name_runs_its_builder_with_the_options_after_it(tmp_path: Path) -> None:
    src = tmp_path / "lib"
    src.mkdir()
    (src / "os.py").write_text('"""Operating system."""\n' + "X = 1\n" * 400)
    out = tmp_path / "out"
    assert main(["pysource", "--src", str(src), "--out", str(out), "--max-files", "1"]) == 0
    assert json.loads((out / "dataset.json").read_text())["name"] == "python-source"
    assert (out / "documents" / "os.py").is_file()


@pytest.mark.parametrize("argv", [[], ["python-docs"]])
def test_an_unknown_or_missing_set_names_the_sets(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert all(name in err for name in BUILDERS)


def test_each_set_answers_help_with_its_own_options(capsys: pytest.CaptureFixture[str]) -> None:
    for name in BUILDERS:
        with pytest.raises(SystemExit) as exited:
            main([name, "--help"])
        assert exited.value.code == 0
        assert f"python -m evaluation_data {name}" in capsys.readouterr().out
