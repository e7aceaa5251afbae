package storetest

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd/store"
)

// Open opens the store of data directory dir, a fresh one when dir is "", and closes it when the
// test ends; a failed Open or Close fails the test. A test may close the store itself first:
// Close is idempotent.
func Open(tb testing.TB, dir string) *store.Store {
	tb.Helper()
	if dir == "" {
		dir = tb.TempDir()
	}
	st, err := store.Open(dir, zerolog.Nop())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := st.Close(context.Background()); err != nil {
			tb.Errorf("close the store: %v", err)
		}
	})
	return st
}
