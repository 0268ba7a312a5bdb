// Package ledger keeps running balances of accounts.
package ledger

import (
	"errors"
	"fmt"
	"sort"
)

// ErrOverdrawn is returned when a withdrawal exceeds the balance.
var ErrOverdrawn = errors.New("ledger: overdrawn")

// Ledger holds the balance of each account.
type Ledger struct {
	balances map[string]int64
}

// Withdraw takes amount cents from the account, or fails if the
// balance would go negative.
func (l *Ledger) Withdraw(account string, amount int64) error {
	balance, ok := l.balances[account]
	if !ok {
		return fmt.Errorf("ledger: no account %q", account)
	}

	if balance < amount {
		return ErrOverdrawn
	}
	l.balances[account] = balance - amount
	return nil
}

// Accounts lists the account names in order.
func (l *Ledger) Accounts() []string {
	names := make([]string, 0, len(l.balances))
	for name := range l.balances {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Total adds up the balances of every account in the ledgers.
func Total(ledgers ...*Ledger) int64 {
	var sum int64
	for _, l := range ledgers {

		for _, balance := range l.balances {
			sum += balance
		}
	}
	return sum
}
