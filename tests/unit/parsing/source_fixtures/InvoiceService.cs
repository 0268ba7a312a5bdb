using System;
using System.Collections.Generic;
using System.Linq;

namespace Billing
{
    /// <summary>
    /// Totals invoices for customer orders.
    /// </summary>
    public sealed class InvoiceService
    {
        private readonly IDictionary<string, decimal> _rates;

        public InvoiceService(IDictionary<string, decimal> rates)
        {
            _rates = rates;
        }

        /// <summary>The total of the lines, tax included.</summary>
        /// <param name="region">Where the order ships.</param>
        [Obsolete("Use TotalAsync")]
        public decimal Total(IEnumerable<InvoiceLine> lines, string region)
        {
            var net = lines.Sum(line => line.Quantity * line.UnitPrice);
            if (!_rates.TryGetValue(region, out var rate))
            {
                throw new ArgumentException($"no tax rate for {region}", nameof(region));
            }

            return Math.Round(net * (1 + rate), 2);
        }

        public int Count { get; private set; }
    }

    public record InvoiceLine(string Sku, int Quantity, decimal UnitPrice);

    public static class Rounding
    {
        /// <summary>Rounds to the nearest cent, halves away from zero.</summary>
        public static decimal ToCents(decimal amount)
        {
            var cents = amount * 100;

            return Math.Round(cents, MidpointRounding.AwayFromZero) / 100;
        }
    }
}
