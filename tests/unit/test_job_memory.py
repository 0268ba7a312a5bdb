"""The per-format size a worker can read within its memory limit."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragsage.adapters.parsing.formats import DocumentFormat
from ragsage.core.documents import RawSource
from ragsage.core.errors import DocumentError
from ragsage.jobs.memory import BYTES_PER_INPUT_BYTE, check_fits, largest_readable

MIB = 1024 * 1024
GIB = 1024 * MIB


def test_a_one_line_text_file_too_big_for_the_limit_is_refused_by_name() -> None:
    source = RawSource(content=b"lorem ipsum " * (4 * MIB), filename="dump.txt")  # 48 MiB

    with pytest.raises(DocumentError) as refused:
        check_fits(source, GIB, 200 * MIB)

    message = str(refused.value)
    assert message.startswith("dump.txt: 48.0 MiB is more than a worker can read as text")
    assert "memory limit of 1,024 MiB (RAGSAGE_JOB_MEMORY_LIMIT): at most 41.2 MiB" in message


def test_what_fits_depends_on_the_format_and_on_what_the_process_holds() -> None:
    page = RawSource(content=b"<p>x</p>" * (2 * MIB), filename="page.html")  # 16 MiB
    check_fits(page, GIB, 200 * MIB)
    with pytest.raises(DocumentError):
        check_fits(page, GIB, 800 * MIB)  # ... but not beside 800 MiB already in use
    module = RawSource(content=b"x = 1\n" * (2 * MIB), filename="generated.py")  # 12 MiB
    with pytest.raises(DocumentError, match="read as python"):
        check_fits(module, GIB, 200 * MIB)


def test_a_format_never_measured_is_left_to_its_reader() -> None:
    check_fits(RawSource(content=b"\x00\x01" * MIB, filename="blob.bin"), 64 * MIB, 60 * MIB)


@given(
    kind=st.sampled_from(sorted(BYTES_PER_INPUT_BYTE)),
    limit=st.integers(64 * MIB, 64 * GIB),
    in_use=st.integers(0, 64 * GIB),
)
def test_the_largest_readable_file_never_takes_the_process_past_its_limit(
    kind: DocumentFormat, limit: int, in_use: int
) -> None:
    largest = largest_readable(kind, limit, in_use)
    assert largest is not None and largest >= 0
    assert in_use + largest * BYTES_PER_INPUT_BYTE[kind] <= max(limit, in_use) + 1
