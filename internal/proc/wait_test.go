package proc

import (
	"context"
	"errors"
	"testing"
)

func TestWait(t *testing.T) {
	if err := Wait(context.Background(), func() {}); err != nil {
		t.Fatalf("Wait of a returning func = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	block := make(chan struct{})
	defer close(block)
	if err := Wait(ctx, func() { <-block }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait past its context = %v, want context.Canceled", err)
	}
}
