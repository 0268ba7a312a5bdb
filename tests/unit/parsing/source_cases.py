"""The source reader's cases: one fixture per language, and the definitions to find in it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragsage.adapters.parsing import HeuristicBackend

FIXTURES = Path(__file__).parent / "source_fixtures"
BACKEND = HeuristicBackend()
SIZE = 512


@dataclass(frozen=True)
class Definition:
    """A definition of a fixture: where its chunk is filed, and its lines.

    Its lines run from the line holding ``marker`` (``back`` lines above it
    when the marker is not on the first) to the first line after it that is
    exactly ``end``.
    """

    path: tuple[str, ...]
    marker: str
    end: str
    back: int = 0


@dataclass(frozen=True)
class Case:
    language: str
    fixture: str
    filename: str
    method: Definition
    function: Definition


RUST = "src/store/cache.rs — mod store::cache — A small least-recently-used cache for parsed pages."
GO = "ledger/ledger.go — package ledger — Package ledger keeps running balances of accounts."
TS = "src/jobs/queue.ts — A retrying job queue for background work."
JS = "lib/rate_limiter.js — Token-bucket rate limiting for outgoing requests."
JAVA = "src/main/java/com/example/inventory/Inventory.java — package com.example.inventory"
C = "src/ringbuf.c — ringbuf.c - a fixed-size byte ring buffer."
CPP = "src/geo/polygon.cpp — Simple polygon geometry on the plane."
CSHARP = "src/Billing/InvoiceService.cs"
# The magic comment that opens nearly every Ruby file says nothing about it.
RUBY = "lib/shop/cart.rb"
PHP = "src/Payments/Refunds.php — namespace App\\Payments"
KOTLIN = "src/main/kotlin/com/example/weather/Forecast.kt — package com.example.weather"
SWIFT = "Sources/Timers/Stopwatch.swift"
BASH = "scripts/deploy.sh — Deploys the current build to the staging hosts."
PYTHON = "kitchen/tea.py"

CASES = [
    Case(
        "rust",
        "cache.rs",
        "src/store/cache.rs",
        Definition(
            (
                RUST,
                "impl<K: Hash + Eq + Clone, V> Lru<K, V>",
                "pub fn insert(&mut self, key: K, value: V) -> Option<V>",
            ),
            "    /// Stores `value` under `key`, evicting the oldest entry when full.",
            "    }",
        ),
        Definition(
            (RUST, "pub fn stale<K, V>(cache: &Lru<K, V>, age: u64) -> usize"),
            "/// Counts the entries not used in the last `age` ticks.",
            "}",
        ),
    ),
    Case(
        "go",
        "ledger.go",
        "ledger/ledger.go",
        # Go methods are declared outside their type: the file is their container.
        Definition(
            (GO, "func (l *Ledger) Withdraw(account string, amount int64) error"),
            "// Withdraw takes amount cents from the account, or fails if the",
            "}",
        ),
        Definition(
            (GO, "func Total(ledgers ...*Ledger) int64"),
            "// Total adds up the balances of every account in the ledgers.",
            "}",
        ),
    ),
    Case(
        "typescript",
        "queue.ts",
        "src/jobs/queue.ts",
        Definition(
            (
                TS,
                "export class RetryQueue extends EventEmitter",
                "async runNext(): Promise<boolean>",
            ),
            "   * Runs the next job; says whether there was one.",
            "  }",
            back=1,
        ),
        Definition(
            (TS, "export function backoff(attempt: number, base = 100): number"),
            "/** The delay before the given attempt, in milliseconds. */",
            "}",
        ),
    ),
    Case(
        "javascript",
        "rate_limiter.js",
        "lib/rate_limiter.js",
        Definition(
            (JS, "class TokenBucket", "async take()"),
            "  /** Takes one token, waiting until one is available. */",
            "  }",
        ),
        Definition(
            (JS, "const limited = (bucket, fn) =>"),
            "/** Wraps `fn` so that each call first takes a token from `bucket`. */",
            "};",
        ),
    ),
    Case(
        "java",
        "Inventory.java",
        "src/main/java/com/example/inventory/Inventory.java",
        Definition(
            (
                JAVA,
                "public final class Inventory",
                '@SuppressWarnings("unused") public synchronized boolean ship('
                "String sku, int count)",
            ),
            "    /** Removes units of an item, if enough are in stock. */",
            "    }",
        ),
        Definition(
            (
                JAVA,
                "public final class Inventory",
                "public static Optional<Integer> levelOf(Inventory inventory, String sku)",
            ),
            "    /** The units in stock of an item, if it was ever received. */",
            "    }",
        ),
    ),
    Case(
        "c",
        "ringbuf.c",
        "src/ringbuf.c",
        # C has no containers: functions sit right under the file.
        Definition(
            (C, "size_t ringbuf_write(struct ringbuf *rb, const unsigned char *src, size_t n)"),
            " * Copies up to n bytes into the buffer and returns how many fit.",
            "}",
            back=1,
        ),
        Definition(
            (C, "int ringbuf_getc(struct ringbuf *rb)"),
            "/* Reads one byte, or returns -1 when the buffer is empty. */",
            "}",
        ),
    ),
    Case(
        "cpp",
        "polygon.cpp",
        "src/geo/polygon.cpp",
        Definition(
            (CPP, "namespace geo", "class Polygon", "[[nodiscard]] double signedArea() const"),
            "    /// The signed area: positive when the vertices run counter-clockwise.",
            "    }",
        ),
        Definition(
            (CPP, "namespace geo", "inline double distance(const Point& a, const Point& b)"),
            "/// The distance between two points.",
            "}",
        ),
    ),
    Case(
        "csharp",
        "InvoiceService.cs",
        "src/Billing/InvoiceService.cs",
        Definition(
            (
                CSHARP,
                "namespace Billing",
                "public sealed class InvoiceService",
                '[Obsolete("Use TotalAsync")] public decimal Total('
                "IEnumerable<InvoiceLine> lines, string region)",
            ),
            "        /// <summary>The total of the lines, tax included.</summary>",
            "        }",
        ),
        Definition(
            (
                CSHARP,
                "namespace Billing",
                "public static class Rounding",
                "public static decimal ToCents(decimal amount)",
            ),
            "        /// <summary>Rounds to the nearest cent, halves away from zero.</summary>",
            "        }",
        ),
    ),
    Case(
        "ruby",
        "cart.rb",
        "lib/shop/cart.rb",
        Definition(
            (RUBY, "module Shop", "class Cart", "def add(sku, price, quantity: 1)"),
            "    # Adds +quantity+ of an item at +price+ each.",
            "    end",
        ),
        Definition(
            (RUBY, "module Shop", "def self.format_money(amount, currency)"),
            '  # Formats an amount of money for display, like "12.50 EUR".',
            "  end",
        ),
    ),
    Case(
        "php",
        "Refunds.php",
        "src/Payments/Refunds.php",
        Definition(
            (
                PHP,
                "final class Refunds",
                "#[\\ReturnTypeWillChange] public function refund("
                "string $paymentId, int $amountCents): string",
            ),
            "     * Refunds part or all of a payment.",
            "    }",
            back=1,
        ),
        Definition(
            (PHP, "function format_cents(int $cents): string"),
            " * Formats cents as a decimal amount.",
            "}",
            back=1,
        ),
    ),
    Case(
        "kotlin",
        "Forecast.kt",
        "src/main/kotlin/com/example/weather/Forecast.kt",
        Definition(
            (
                KOTLIN,
                "data class Forecast(val place: String, val days: List<Day>)",
                '@Deprecated("Use hottest()") fun warmest(): Day?',
            ),
            "     * The warmest day, or null when there are no days.",
            "    }",
            back=1,
        ),
        Definition(
            (KOTLIN, "fun meanHigh(forecast: Forecast): Int"),
            "/** The mean of the daily highs, rounded to a whole degree. */",
            "}",
        ),
    ),
    Case(
        "swift",
        "Stopwatch.swift",
        "Sources/Timers/Stopwatch.swift",
        Definition(
            (
                SWIFT,
                "final class Stopwatch",
                "@discardableResult func stop(at now: Date = Date()) -> TimeInterval",
            ),
            "    /// Pauses timing and returns the total so far.",
            "    }",
        ),
        Definition(
            (SWIFT, "func formatElapsed(_ seconds: TimeInterval) -> String"),
            '/// Formats seconds as minutes and seconds, like "3:07".',
            "}",
        ),
    ),
    Case(
        "bash",
        "deploy.sh",
        "scripts/deploy.sh",
        Definition(
            (BASH, "deploy_host()"),
            "# Copies the build to one host and restarts the service there.",
            "}",
        ),
        Definition((BASH, "main()"), "main() {", "}"),
    ),
    Case(
        "python",
        "tea.py",
        "kitchen/tea.py",
        Definition(
            (
                PYTHON,
                "@dataclass class Kettle",
                "@staticmethod async def heat(target: int = 100) -> int",
            ),
            "    # Heating is slow: callers should await it.",
            "        return temperature",
        ),
        Definition(
            (PYTHON, "def steep(pot: Kettle, minutes: int = 4) -> str"),
            "def steep(pot: Kettle, minutes: int = 4) -> str:",
            "    return strength",
        ),
    ),
]
BY_LANGUAGE = {case.language: case for case in CASES}
