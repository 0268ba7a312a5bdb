"""Pinned package archives for the dataset builders: downloaded once, checked, unpacked once.

A builder lists every input as a package at an exact version with the SHA-256
of its archive.  Debian packages come from ``apt-get download`` and unpack with
``dpkg-deb -x``; npm packages come from ``npm pack`` and are untarred.  Nothing
is installed into the system: archives and trees live under the builder's
cache folder (``archives/`` and ``unpacked/``).  An archive whose bytes differ
from the pin, or a version the registry no longer serves, stops the build with
a message that says which pin to move.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Pin:
    """One input: a package of a registry (``deb`` or ``npm``) at a version, and its hash."""

    registry: str
    package: str
    version: str
    sha256: str

    @property
    def archive_glob(self) -> str:
        """The name ``apt-get download`` or ``npm pack`` gives the archive, as a glob."""
        if self.registry == "npm":
            return f"{self.package.lstrip('@').replace('/', '-')}-{self.version}.tgz"
        return f"{self.package}_{self.version.replace(':', '%3a')}_*.deb"


def sha256_of(data: bytes) -> str:
    """Hex SHA-256 of some bytes."""
    return hashlib.sha256(data).hexdigest()


def run_tool(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a packaging tool, its output captured; a missing tool stops the build."""
    try:
        return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise SystemExit(f"error: {command[0]} is not installed ({exc})") from exc


def fetch(pin: Pin, cache: Path) -> Path:
    """The pinned archive in ``cache/archives``, downloaded if missing, its SHA-256 checked."""
    folder = cache / "archives"
    folder.mkdir(parents=True, exist_ok=True)
    found = sorted(folder.glob(pin.archive_glob))
    if not found:
        if pin.registry == "deb":
            spec = f"{pin.package}={pin.version}"
            done = run_tool(["apt-get", "download", spec], folder)
            how = "apt-get download"
            hint = f"run `apt-get update`; if it is gone, pin what `apt-cache policy {pin.package}`"
        else:
            spec = f"{pin.package}@{pin.version}"
            done = run_tool(["npm", "pack", spec, "--loglevel=error"], folder)
            how = "npm pack"
            hint = f"if it is gone, pin what `npm view {pin.package} versions`"
        found = sorted(folder.glob(pin.archive_glob))
        if done.returncode != 0 or not found:
            message = (done.stderr or done.stdout).strip().splitlines()
            errors = [line for line in message if line.startswith(("E:", "npm error"))]
            why = next((line for line in errors if "notarget" in line), errors[0] if errors else "")
            raise SystemExit(
                f"error: {how} {spec} failed: the pinned version is not downloadable "
                f"({why or 'no archive written'}). {hint} offers in SOURCES, with its SHA-256, "
                "and rebuild: the questions may change with it."
            )
    archive = found[0]
    digest = sha256_of(archive.read_bytes())
    if digest != pin.sha256:
        raise SystemExit(
            f"error: {archive} has SHA-256 {digest}, but SOURCES pins {pin.sha256}; "
            "delete it to download again, or update the pin if the input really changed"
        )
    return archive


def unpack(pin: Pin, archive: Path, cache: Path) -> Path:
    """The unpacked package (``dpkg-deb -x``, or the npm tarball untarred) in ``cache/unpacked``."""
    target = cache / "unpacked" / archive.name.removesuffix(".deb").removesuffix(".tgz")
    marker = target / ".ragsage-unpacked"
    if marker.is_file():
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    if pin.registry == "deb":
        done = run_tool(["dpkg-deb", "-x", str(archive.resolve()), str(target)], cache)
        if done.returncode != 0:
            raise SystemExit(f"error: dpkg-deb -x {archive} failed: {done.stderr.strip()}")
    else:
        with tarfile.open(archive) as packed:
            packed.extractall(target, filter="data")
    marker.write_text(pin.sha256 + "\n", encoding="utf-8")
    return target
