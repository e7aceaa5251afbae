package cluster

import (
	"time"

	"github.com/shotd/shotd"
)

// UsageStore is what the account actors read and write in cluster mode (actors.UsageStore):
// accounts from the Book, and no usage of their own, since the ledger alone bills. An actor's
// counts then start at zero and stay the node's own: its quota check is looser than the
// ledger's, which decides.
type UsageStore struct {
	Book *Book
}

// Usage is an empty period: the billed count lives in the ledger.
func (u UsageStore) Usage(acc shotd.Account, now time.Time) (shotd.Usage, error) {
	start, end := shotd.BillingPeriod(acc.CreatedAt, now)
	return shotd.Usage{PeriodStart: start, PeriodEnd: end}, nil
}

// RecordUsage writes nothing (the ledger billed the success) and returns the stored account.
func (u UsageStore) RecordUsage(acc shotd.Account, now time.Time, _ shotd.UsageDelta, _ int) (shotd.Usage, shotd.Account, error) {
	a, err := u.Book.Account(acc.ID)
	if err != nil {
		return shotd.Usage{}, shotd.Account{}, err
	}
	us, _ := u.Usage(a, now)
	return us, a, nil
}

// Account reads the account from the Book.
func (u UsageStore) Account(id string) (shotd.Account, error) { return u.Book.Account(id) }
