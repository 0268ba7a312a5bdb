"""A definition too long for one chunk is cut between statements, never inside one.

Each part starts with a statement of the function's body (not with the
``)`` that closes a call, nor a line continuing the one above), fits the
budget, and is filed under the function's signature.
"""

from __future__ import annotations

import pytest

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.adapters.parsing.splitting import statement_starts
from ragsage.adapters.parsing.tokens import make_token_counter
from ragsage.core.chunks import Chunk
from ragsage.core.documents import Document, RawSource
from tests.unit.parsing.fenced import code_lines

BACKEND = HeuristicBackend()
count = make_token_counter("cl100k_base")
SIZE = 128

GO_SIGNATURE = "func Build(ctx context.Context, db *sql.DB, month time.Time, out io.Writer) error"
GO = f"""package report

// Build collects the month's invoices, totals them by customer and writes
// the report, one line per customer, largest total first.
{GO_SIGNATURE} {{
	start := time.Date(month.Year(), month.Month(), 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(0, 1, 0)
	rows, err := db.QueryContext(
		ctx,
		"SELECT customer, amount_cents FROM invoices WHERE issued >= $1 AND issued < $2",
		start,
		end,
	)
	if err != nil {{
		return fmt.Errorf("report: query invoices for %s: %w", month.Format("2006-01"), err)
	}}
	defer rows.Close()

	totals := make(map[string]int64)
	for rows.Next() {{
		var customer string
		var cents int64
		if err := rows.Scan(&customer, &cents); err != nil {{
			return fmt.Errorf("report: scan invoice: %w", err)
		}}
		totals[customer] += cents
	}}
	if err := rows.Err(); err != nil {{
		return fmt.Errorf("report: read invoices: %w", err)
	}}

	lines := make([]line, 0, len(totals))
	for customer, cents := range totals {{
		lines = append(lines, line{{
			customer: customer,
			cents:    cents,
		}})
	}}
	sort.Slice(lines, func(i, j int) bool {{
		if lines[i].cents != lines[j].cents {{
			return lines[i].cents > lines[j].cents
		}}
		return lines[i].customer < lines[j].customer
	}})

	w := bufio.NewWriter(out)
	fmt.Fprintf(w, "Invoices for %s\\n", month.Format("January 2006"))
	fmt.Fprintf(
		w,
		"%d customers, %s in total\\n\\n",
		len(lines),
		formatCents(sum(lines)),
	)
	for _, l := range lines {{
		amount := formatCents(l.cents)
		if _, err := fmt.Fprintf(w, "%-40s %12s\\n", l.customer, amount); err != nil {{
			return fmt.Errorf("report: write line for %s: %w", l.customer, err)
		}}
	}}
	logger := slog.Default().
		With("month", month.Format("2006-01")).
		With("customers", len(lines))
	logger.Info("report written")
	return w.Flush()
}}
"""

PYTHON_SIGNATURE = "def build_report(db: Connection, month: date, out: TextIO) -> int"
PYTHON = f'''"""Monthly invoice reports."""

from datetime import date
from typing import TextIO


{PYTHON_SIGNATURE}:
    """Write the month's totals by customer, largest first; return the customer count."""
    start = month.replace(day=1)
    end = (start + timedelta(days=32)).replace(day=1)
    rows = db.execute(
        "SELECT customer, amount_cents FROM invoices WHERE issued >= ? AND issued < ?",
        (start.isoformat(), end.isoformat()),
    ).fetchall()
    if not rows:
        out.write(f"No invoices for {{start:%B %Y}}\\n")
        return 0

    totals: dict[str, int] = {{}}
    for customer, cents in rows:
        totals[customer] = totals.get(customer, 0) + cents
    ranked = sorted(
        totals.items(),
        key=lambda item: (-item[1], item[0]),
    )

    out.write(f"Invoices for {{start:%B %Y}}\\n")
    out.write(
        "{{}} customers, {{}} in total\\n\\n".format(
            len(ranked),
            format_cents(sum(cents for _, cents in ranked)),
        )
    )
    for customer, cents in ranked:
        line = f"{{customer:<40}} {{format_cents(cents):>12}}"
        out.write(line + "\\n")
    largest = (
        frame(ranked)
        .filter(lambda row: row[1] > 100_000)
        .names()
    )
    if largest:
        logger.info(
            "large customers this month: %s",
            ", ".join(largest),
        )
    logger.info("report for %s written", start)
    return len(ranked)
'''


def _chunks(filename: str, text: str) -> list[Chunk]:
    parsed = BACKEND.parse(RawSource(text.encode(), filename))
    document = Document("doc_1", "0" * 64, parsed.title, "repo", metadata=parsed.metadata)
    return list(BACKEND.chunk(document, parsed.pages, size=SIZE, overlap=20))


def _function_lines(text: str, signature: str) -> list[str]:
    """The function's lines, its doc comment (Go) or signature (Python) first."""
    lines = text.split("\n")
    first = next(i for i, line in enumerate(lines) if line.startswith(signature))
    while first > 0 and lines[first - 1].startswith("//"):
        first -= 1
    return lines[first:]


# A line opening like this continues a statement; one ending like this leaves it open.
_CONTINUES = (")", "]", "}", ".")
_OPEN = ("(", "[", ",", ".", "\\", "=", "+", "&&", "||")

CASES = [
    pytest.param("report/build.go", GO, GO_SIGNATURE, "\t", id="go"),
    pytest.param("report/build.py", PYTHON, PYTHON_SIGNATURE, "    ", id="python"),
]


@pytest.mark.parametrize(("filename", "text", "signature", "indent"), CASES)
def test_a_long_function_is_cut_before_statements_of_its_body(
    filename: str, text: str, signature: str, indent: str
) -> None:
    chunks = [c for c in _chunks(filename, text) if c.heading_path[-1].startswith(signature)]
    assert len(chunks) >= 4, "the function must be well over the budget"
    for before, chunk in zip(chunks, chunks[1:], strict=False):
        first = next(line for line in code_lines(chunk.text) if line.strip())
        last = [line for line in code_lines(before.text) if line.strip()][-1]
        assert first.startswith(indent) and first[len(indent)] not in " \t", (
            f"a part starts inside a nested block: {first!r}"
        )
        assert not first.strip().startswith(_CONTINUES), f"a part starts mid-statement: {first!r}"
        assert not last.rstrip().endswith(_OPEN), f"a part ends mid-statement: {last!r}"


@pytest.mark.parametrize(("filename", "text", "signature", "indent"), CASES)
def test_a_long_function_keeps_every_line_in_order_within_budget_under_its_signature(
    filename: str, text: str, signature: str, indent: str
) -> None:
    chunks = _chunks(filename, text)
    for chunk in chunks:
        assert count(chunk.text) <= SIZE, chunk.text
    inside = [c for c in chunks if c.heading_path[-1].startswith(signature)]
    assert len({c.heading_path for c in inside}) == 1
    assert len(inside[0].heading_path) == 2, inside[0].heading_path
    kept = [line for c in inside for line in code_lines(c.text) if line.strip()]
    assert kept == [line for line in _function_lines(text, signature) if line.strip()]


def test_statement_starts_marks_lines_that_begin_a_statement_of_the_body() -> None:
    lines = [
        "func f() {",
        "\tx := call(",
        "\t\ta,",
        "\t)",
        "\ty := build(x,",
        "\tother)",
        "\tz := q",
        "\t.Then()",
        "\tw := [",
        "\t1, 2]",
        "",
        "\tif z {",
        "\t\treturn w",
        "\t}",
        "\treturn z",
        "}",
    ]
    assert statement_starts(lines) == [
        True,  # the signature, at the shallowest level
        True,
        False,  # deeper than the body
        False,  # closes the call
        True,
        False,  # the line above ends in a comma
        True,
        False,  # continues a chain
        True,
        False,  # the line above opens a bracket
        False,  # blank
        True,
        False,
        False,  # closes the block
        True,
        False,
    ]


def test_statement_starts_when_all_lines_share_one_level() -> None:
    lines = ["a = 1", "b = f(", "c)", "d = 2 +", "3", "e = 4"]
    assert statement_starts(lines) == [True, True, False, True, False, True]
