"""deploy/Dockerfile read as text: a builder stage, and a slim, non-root, compiler-free image."""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
from dataclasses import dataclass, field

from .helpers import DEPLOY, REPO

COMPILERS = ("build-essential", "gcc", "g++", "cpp", "make", "clang", "cc", "rustc", "cargo")


@dataclass
class Stage:
    base: str
    name: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [argument for word, argument in self.instructions if word == keyword]


def _instructions() -> list[tuple[str, str]]:
    """(KEYWORD, arguments) pairs, with continuation lines joined and comments dropped."""
    logical, pending = [], ""
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "the Dockerfile ends inside a continuation"
    pairs = []
    for text in logical:
        word, _, rest = text.strip().partition(" ")
        pairs.append((word.upper(), rest.strip()))
    return pairs


def _stages() -> tuple[dict[str, str], list[Stage]]:
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for word, rest in _instructions():
        if word == "FROM":
            parts = rest.split()
            image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], parts[0])
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else ""
            stages.append(Stage(image, name))
        elif stages:
            stages[-1].instructions.append((word, rest))
        elif word == "ARG":
            key, _, default = rest.partition("=")
            args[key] = default
    return args, stages


def _apt_packages(stage: Stage) -> list[str]:
    packages = []
    for command in stage.all("RUN"):
        for step in command.split("&&"):
            if "apt-get" not in step:
                continue
            words = shlex.split(step)
            if words[:2] == ["apt-get", "install"]:
                packages += [w for w in words[2:] if not w.startswith("-")]
    return packages


def test_a_builder_stage_builds_and_the_final_stage_only_copies() -> None:
    _, stages = _stages()
    assert len(stages) >= 2
    builder, final = stages[0], stages[-1]
    assert "build-essential" in _apt_packages(builder)
    assert any("pip install" in command for command in builder.all("RUN"))
    assert any(f"--from={builder.name}" in copy for copy in final.all("COPY"))
    assert not any("pip install" in command for command in final.all("RUN"))


def test_the_final_stage_is_slim_python_3_11() -> None:
    _, stages = _stages()
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", stages[-1].base), stages[-1].base


def test_the_final_stage_installs_no_compilers_but_has_ocr() -> None:
    _, stages = _stages()
    packages = _apt_packages(stages[-1])
    assert "tesseract-ocr" in packages
    for package in packages:
        assert package not in COMPILERS and not package.endswith("-dev"), package


def test_the_final_stage_runs_as_a_numeric_non_root_user() -> None:
    _, stages = _stages()
    final = stages[-1]
    user = final.all("USER")[-1].split(":")[0]
    assert user.isdigit() and int(user) != 0
    assert any(f"--uid {user}" in command for command in final.all("RUN"))
    # Nothing after the switch runs as root again.
    words = [word for word, _ in final.instructions]
    assert "RUN" not in words[words.index("USER") :]


def test_entrypoint_is_ragsage_and_there_is_no_healthcheck() -> None:
    _, stages = _stages()
    final = stages[-1]
    assert json.loads(final.all("ENTRYPOINT")[-1]) == ["ragsage"]
    assert json.loads(final.all("CMD")[-1])[0] == "api"
    assert all(word != "HEALTHCHECK" for stage in stages for word, _ in stage.instructions)


def test_the_build_context_holds_what_is_copied_and_never_env_files() -> None:
    patterns = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]

    def sent(path: str) -> bool:
        included = True
        for pattern in patterns:
            negated = pattern.startswith("!")
            if fnmatch.fnmatch(path, pattern.lstrip("!")):
                included = negated
        return included

    _, stages = _stages()
    for stage in stages:
        for copy in stage.all("COPY"):
            if copy.startswith("--from"):
                continue
            for source in shlex.split(copy)[:-1]:
                assert (REPO / source).exists(), source
                assert sent(source), f"{source} is excluded by .dockerignore"
    for secret in (".env", ".venv", ".git", "tests"):
        assert not sent(secret), secret
