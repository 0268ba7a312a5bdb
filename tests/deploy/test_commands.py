"""Every command line the deployment files give the image is one `ragsage` accepts."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from ragsage.cli import build_parser

from .helpers import DEPLOY, REPO


def _command_lines() -> dict[str, list[str]]:
    lines: dict[str, list[str]] = {}
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    lines["Dockerfile CMD"] = json.loads(re.findall(r"^CMD (.+)$", dockerfile, re.MULTILINE)[-1])
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    for name in ("migrate", "api", "worker"):
        # Compose fills ${VAR:-default}; use the default here.
        command = compose["services"][name]["command"]
        lines[f"compose {name}"] = [re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", w) for w in command]
    for path in sorted((DEPLOY / "kubernetes").glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document and document["kind"] == "CronJob":
                document = document["spec"]["jobTemplate"]
            if document and document.get("kind", "Job") in ("Deployment", "Job"):
                for container in document["spec"]["template"]["spec"]["containers"]:
                    lines[f"{path.name} {container['name']}"] = container["args"]
    return lines


COMMAND_LINES = _command_lines()


@pytest.mark.parametrize("argv", COMMAND_LINES.values(), ids=COMMAND_LINES.keys())
def test_the_ragsage_cli_accepts_the_command_line(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert callable(args.handler)
