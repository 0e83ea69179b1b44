// Package drain waits for work under way to end, as a shutdown does: the work finishes or the
// shutdown's deadline comes.
package drain

import (
	"context"
	"sync"
)

// Wait waits until wg's work is done, or ctx ends (then ctx's error).
func Wait(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
