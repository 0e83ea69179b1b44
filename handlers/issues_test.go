package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/handlers"
)

// events records what the Issues handler records and enqueues, in order.
type events struct {
	mu   sync.Mutex
	log  []string
	fail error // ObserveEvent fails with it
}

func (e *events) ObserveEvent(_ context.Context, ev enforce.Lifecycle) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail != nil {
		return e.fail
	}
	e.log = append(e.log, "recorded "+ev.DeliveryID+" "+ev.Kind)
	return nil
}

func (e *events) EnqueueChange(context.Context, enforce.Change) error { return nil }

func (e *events) EnqueueLifecycle(_ context.Context, ev enforce.Lifecycle) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, "queued "+ev.DeliveryID+" "+ev.Kind)
	return nil
}

func issuePayload(action, sender string) []byte {
	return fmt.Appendf(nil, `{"action":%q,"issue":{"number":7,"state_reason":"completed","updated_at":"2026-11-01T12:00:00Z"},
		"repository":{"name":"app","owner":{"login":"acme"}},"sender":{"login":%q},"installation":{"id":1}}`, action, sender)
}

// A close or reopen is recorded as a report of its issue before it is queued (and before
// GitHub is answered): a sweep's proof that the delivery arrived then covers it. A failure to
// record answers an error (GitHub shows the delivery failed; the sweep redelivers it) and queues
// nothing. The app's own events and other actions are neither.
func TestIssuesRecordsBeforeQueueing(t *testing.T) {
	tests := []struct {
		name, action, sender string
		fail                 error
		want                 []string
		wantErr              bool
	}{
		{"a close", "closed", "alice", nil, []string{"recorded d1 issue_closed", "queued d1 issue_closed"}, false},
		{"a reopen", "reopened", "agent-1", nil, []string{"recorded d1 issue_reopened", "queued d1 issue_reopened"}, false},
		{"recording fails", "closed", "alice", errors.New("disk full"), nil, true},
		{"our own close", "closed", "ralph-gate[bot]", nil, nil, false},
		{"an edit", "edited", "alice", nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &events{fail: tt.fail}
			h := &handlers.Issues{Scope: handlers.Scope{AppLogin: "ralph-gate[bot]"}, Queue: ev, History: ev}
			err := h.Handle(context.Background(), handlers.EventIssues, "d1", issuePayload(tt.action, tt.sender))
			if (err != nil) != tt.wantErr || fmt.Sprint(ev.log) != fmt.Sprint(tt.want) {
				t.Fatalf("err %v, log %q; want error %v, log %q", err, ev.log, tt.wantErr, tt.want)
			}
		})
	}
}
