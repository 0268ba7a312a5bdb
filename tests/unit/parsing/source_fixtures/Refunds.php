<?php

declare(strict_types=1);

namespace App\Payments;

use App\Payments\Gateway\Client;
use InvalidArgumentException;

/**
 * Issues refunds against captured payments.
 */
final class Refunds
{
    public function __construct(private Client $client)
    {
    }

    /**
     * Refunds part or all of a payment.
     *
     * @throws InvalidArgumentException when the amount is not positive
     */
    #[\ReturnTypeWillChange]
    public function refund(string $paymentId, int $amountCents): string
    {
        if ($amountCents <= 0) {
            throw new InvalidArgumentException("amount must be positive");
        }

        $response = $this->client->post("/refunds", [
            "payment" => $paymentId,
            "amount" => $amountCents,
        ]);
        return $response["id"];
    }
}

/**
 * Formats cents as a decimal amount.
 */
function format_cents(int $cents): string
{
    $sign = $cents < 0 ? "-" : "";

    return $sign . number_format(abs($cents) / 100, 2);
}
