// Package spend counts the GitHub requests made on behalf of one piece of work: the work puts
// a Meter in its context, and the client middleware that sends every GitHub request adds one
// to the Meter of the request's context. Work started from that context and left running
// after it (a walk a handoff woke) keeps counting on the same Meter.
package spend

import (
	"context"
	"sync/atomic"
)

// Meter counts requests; its zero value is ready, and each request may also be reported as
// it is made (Each).
type Meter struct {
	n atomic.Int64
	// Each, when set, is called once per request, as it is made (also after the work that
	// owns the Meter has returned).
	Each func()
}

// Count is the number of requests made so far.
func (m *Meter) Count() int { return int(m.n.Load()) }

type key struct{}

// With returns ctx carrying m.
func With(ctx context.Context, m *Meter) context.Context { return context.WithValue(ctx, key{}, m) }

// From is ctx's Meter, nil when it has none. A request shared by several pieces of work is
// sent with one of theirs (With(ctx, From(first))), so that it is counted once, by the work
// it carries, not by whichever happened to send it.
func From(ctx context.Context) *Meter {
	m, _ := ctx.Value(key{}).(*Meter)
	return m
}

// Add counts one request on ctx's Meter, if it has one.
func Add(ctx context.Context) {
	m, _ := ctx.Value(key{}).(*Meter)
	if m == nil {
		return
	}
	m.n.Add(1)
	if m.Each != nil {
		m.Each()
	}
}
