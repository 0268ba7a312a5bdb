"""Checks on an Office (zip) container before a library inflates any of it."""

from __future__ import annotations

import io
import zipfile

from ragsage.adapters.parsing.limits import ParseLimits
from ragsage.core.errors import ParseError


def check_container(
    content: bytes, filename: str, kind: str, main_part: str, limits: ParseLimits
) -> None:
    """Refuse a corrupt zip, one missing ``main_part``, or a zip bomb, from its directory alone.

    The declared sizes are trustworthy as a bound: Python's zip reader never
    inflates a member past its declared size, so checking them caps the work.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as exc:
        raise ParseError(filename, f"not a valid {kind} file (corrupt zip container)") from exc
    if len(members) > limits.max_zip_members:
        raise ParseError(
            filename, f"{kind} container holds more than {limits.max_zip_members} parts"
        )
    names = {member.filename for member in members}
    if "[Content_Types].xml" not in names or main_part not in names:
        raise ParseError(filename, f"not a valid {kind} file (the zip has no {main_part})")
    total = 0
    for member in members:
        total += member.file_size
        ratio = member.file_size / max(member.compress_size, 1)
        if (
            member.file_size > limits.max_zip_member_bytes
            or total > limits.max_zip_total_bytes
            or (member.file_size > 1024 * 1024 and ratio > limits.max_compression_ratio)
        ):
            raise ParseError(
                filename,
                f"{kind} container inflates beyond safe limits (part {member.filename!r}); "
                "refusing a possible zip bomb",
            )
