package ghboard

import (
	"context"
	"sync"
)

// Write classes: when the write turn is free, a waiting board write (a revert, an automated
// move: they restore or advance the board) goes before a waiting explanation (a comment),
// whatever their order of arrival. A storm of reverts therefore puts the board right first,
// and its comments follow.
const (
	classBoard   = 0
	classExplain = 1
	classes      = 2
)

// explainClass marks a context whose mutations are explanations (comments).
type explainClass struct{}

// asExplanation marks ctx's mutations as explanations: they wait while board writes do.
func asExplanation(ctx context.Context) context.Context {
	return context.WithValue(ctx, explainClass{}, true)
}

func classOf(ctx context.Context) int {
	if ctx.Value(explainClass{}) != nil {
		return classExplain
	}
	return classBoard
}

// turnstile hands one client's write turn to one mutation at a time, board writes first.
type turnstile struct {
	mu      sync.Mutex
	busy    bool
	waiting [classes][]chan struct{}
}

// acquire waits for the turn (or ctx's end); the caller must release it.
func (t *turnstile) acquire(ctx context.Context, class int) error {
	t.mu.Lock()
	if !t.busy {
		t.busy = true
		t.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	t.waiting[class] = append(t.waiting[class], ch)
	t.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		t.mu.Lock()
		for i, w := range t.waiting[class] {
			if w == ch {
				t.waiting[class] = append(t.waiting[class][:i], t.waiting[class][i+1:]...)
				t.mu.Unlock()
				return ctx.Err()
			}
		}
		t.mu.Unlock()
		// The turn was handed over as ctx ended: pass it on.
		t.release()
		return ctx.Err()
	}
}

// yield hands the turn of an explanation (class) to a board write waiting for it, if any,
// and waits to get it back, first among the explanations; false when nobody was waiting.
func (t *turnstile) yield(ctx context.Context, class int) (bool, error) {
	t.mu.Lock()
	if class == classBoard || len(t.waiting[classBoard]) == 0 {
		t.mu.Unlock()
		return false, nil
	}
	ch := make(chan struct{})
	t.waiting[class] = append([]chan struct{}{ch}, t.waiting[class]...)
	next := t.waiting[classBoard][0]
	t.waiting[classBoard] = t.waiting[classBoard][1:]
	close(next)
	t.mu.Unlock()
	select {
	case <-ch:
		return true, nil
	case <-ctx.Done():
		t.mu.Lock()
		for i, w := range t.waiting[class] {
			if w == ch {
				t.waiting[class] = append(t.waiting[class][:i], t.waiting[class][i+1:]...)
				t.mu.Unlock()
				return true, ctx.Err()
			}
		}
		t.mu.Unlock()
		t.release()
		return true, ctx.Err()
	}
}

// release hands the turn to the first waiter of the most urgent class, or frees it.
func (t *turnstile) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.waiting {
		if len(t.waiting[c]) > 0 {
			ch := t.waiting[c][0]
			t.waiting[c] = t.waiting[c][1:]
			close(ch) // the turn stays busy: it is the waiter's now
			return
		}
	}
	t.busy = false
}
