// Package drain waits for work under way to end, as a shutdown does: the work finishes or the
// shutdown's deadline comes.
package drain

import (
	"context"
	"sync"
)

// Group counts work under way. Unlike a sync.WaitGroup, work may start while someone waits:
// a shutdown waits for the work being handed out (explanations beside walks that are still
// running) without stopping it first, and a WaitGroup whose counter goes up from zero during
// a Wait panics. The zero value is ready.
type Group struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n comes back to 0
}

// Add records one piece of work begun.
func (g *Group) Add() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		g.idle = make(chan struct{})
	}
	g.n++
}

// Done records one piece of work ended.
func (g *Group) Done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		panic("drain: Done without Add")
	}
	g.n--
	if g.n == 0 {
		close(g.idle)
	}
}

// Wait waits until no work is under way (work begun meanwhile counts), or ctx ends (then
// ctx's error).
func (g *Group) Wait(ctx context.Context) error {
	g.mu.Lock()
	n, idle := g.n, g.idle
	g.mu.Unlock()
	if n == 0 {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
