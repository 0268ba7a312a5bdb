"""One-time sign-in codes: made and opened with the operator's keys, dated, spent once."""

from __future__ import annotations

import io
import re
import time

import pytest

from ragsage.adapters.sealing import Sealer, new_operator_key
from ragsage.cli import main
from ragsage.core.errors import MarksUnavailable
from ragsage.management.sign_in import (
    CLOCK_SKEW_SECONDS,
    CODE_LIFETIME_SECONDS,
    USED_MARK_SECONDS,
    CodeExpired,
    CodeNotIssued,
    CodeUsed,
    SignInCodes,
    SignInUnavailable,
    sign_in_link,
)

KEY = "rsk_abcdefghij_" + "k" * 43


class Marks:
    """Used codes kept in a dict: the first mark of a name wins, as in Redis."""

    def __init__(self, away: bool = False) -> None:
        self.marked: dict[str, int] = {}
        self.away = away

    def first(self, name: str, keep_for: int) -> bool:
        if self.away:
            raise MarksUnavailable("Redis could not be reached (ConnectionError)")
        if name in self.marked:
            return False
        self.marked[name] = keep_for
        return True


@pytest.fixture
def codes() -> SignInCodes:
    return SignInCodes(Sealer(new_operator_key()))


def test_a_code_opens_to_its_key_and_is_spent_by_its_first_exchange(codes: SignInCodes) -> None:
    code = codes.make(KEY)
    assert KEY not in code and "rsk_" not in code
    assert codes.open(code).key == KEY
    marks = Marks()
    assert codes.exchange(code, marks) == KEY
    # Marked for longer than the code could still be accepted anywhere.
    assert list(marks.marked.values()) == [USED_MARK_SECONDS]
    assert USED_MARK_SECONDS >= CODE_LIFETIME_SECONDS + CLOCK_SKEW_SECONDS
    with pytest.raises(CodeUsed, match="already been used"):
        codes.exchange(code, marks)
    # Two codes for the same key are two codes.
    assert codes.exchange(codes.make(KEY), marks) == KEY


def test_a_code_lives_for_its_lifetime_by_its_own_date(codes: SignInCodes) -> None:
    now = float(int(time.time()))  # a code's date is in whole seconds
    made = codes.make(KEY, now=now)
    assert codes.open(made, now=now + CODE_LIFETIME_SECONDS).key == KEY
    with pytest.raises(CodeExpired, match="works for 15 minutes"):
        codes.open(made, now=now + CODE_LIFETIME_SECONDS + 1)
    # A maker whose clock runs a little ahead is tolerated; far ahead is not.
    assert codes.open(codes.make(KEY, now=now + CLOCK_SKEW_SECONDS), now=now).key == KEY
    with pytest.raises(CodeNotIssued, match="ahead of the server's clock"):
        codes.open(codes.make(KEY, now=now + 3600), now=now)


def test_only_this_deployments_codes_open(codes: SignInCodes) -> None:
    operator_key = new_operator_key()
    mine = SignInCodes(Sealer(operator_key))
    code = mine.make(KEY)
    # The operator's key rotated in front of the old one: old codes still open.
    assert SignInCodes(Sealer(f"{new_operator_key()},{operator_key}")).open(code).key == KEY
    for forged in (
        codes.make(KEY),  # another deployment's
        Sealer(operator_key).seal(KEY),  # a stored secret sealed with the same operator key
        Sealer(operator_key).derived("another purpose").seal(KEY),
        code[:-10],
        code.swapcase(),
        "",
        "é" * 10,
        "x" * 30_000,
    ):
        with pytest.raises(CodeNotIssued, match="not valid"):
            mine.exchange(forged, Marks(away=True))  # never asked: it would raise


def test_an_unreachable_store_leaves_the_code_unspent(codes: SignInCodes) -> None:
    code = codes.make(KEY)
    with pytest.raises(SignInUnavailable, match="try again"):
        codes.exchange(code, Marks(away=True))
    assert codes.exchange(code, Marks()) == KEY


def test_the_link_carries_the_code_in_its_fragment() -> None:
    assert sign_in_link("http://127.0.0.1:8000/", "gAAA") == "http://127.0.0.1:8000/#code=gAAA"


def test_the_command_line_prints_a_link_for_a_key_read_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    operator_key = new_operator_key()
    monkeypatch.setenv("RAGSAGE_SEALING_KEYS", operator_key)
    monkeypatch.setattr("sys.stdin", io.StringIO(KEY + "\n"))
    assert main(["keys", "sign-in-link", "--url", "http://ragsage.internal:8000"]) == 0
    printed = capsys.readouterr()
    found = re.fullmatch(r"http://ragsage\.internal:8000/#code=(\S+)\n", printed.out)
    assert found, printed.out
    assert SignInCodes(Sealer(operator_key)).open(found.group(1)).key == KEY
    assert "once, within 15 minutes" in printed.err and KEY not in printed.out + printed.err

    monkeypatch.setattr("sys.stdin", io.StringIO("two words\n"))
    assert main(["keys", "sign-in-link"]) == 2
    assert "one API key" in capsys.readouterr().err
    monkeypatch.delenv("RAGSAGE_SEALING_KEYS")
    monkeypatch.delenv("RAGSAGE_WEBHOOK_KEYS", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO(KEY))
    assert main(["keys", "sign-in-link"]) == 2
    assert "RAGSAGE_SEALING_KEYS is not set" in capsys.readouterr().err
