package proc

import "context"

// Wait runs f on a goroutine and waits for it to return or for ctx to end, whichever is first:
// the shape of a Close(ctx) that may not wait past its caller's deadline. f keeps running after
// ctx ends; Wait then returns ctx.Err().
func Wait(ctx context.Context, f func()) error {
	done := make(chan struct{})
	go func() {
		f()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
