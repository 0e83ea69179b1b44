package handlers

import (
	"context"
	"testing"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// nopQueue takes changes and drops them: the benchmarks time decoding and scoping only.
type nopQueue struct{}

func (nopQueue) EnqueueChange(context.Context, enforce.Change) error       { return nil }
func (nopQueue) EnqueueLifecycle(context.Context, enforce.Lifecycle) error { return nil }

// fieldChangePayload is a projects_v2_item "edited" webhook as GitHub (and ghsim) sends it.
const fieldChangePayload = `{"action":"edited","projects_v2_item":{"id":3001,"node_id":"PVTI_lADOBench","project_node_id":"PVT_kwDOBench",
"content_node_id":"I_kwDOBench","content_type":"Issue","creator":{"login":"alice","id":101,"node_id":"U_alice","type":"User",
"site_admin":false},"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:05:06Z","archived_at":null},
"changes":{"field_value":{"field_node_id":"PVTSSF_lADOBench","field_type":"single_select","field_name":"Workflow State",
"project_number":1,"from":{"id":"a1","name":"Backlog","color":"GRAY","description":""},
"to":{"id":"b2","name":"In Progress","color":"BLUE","description":""}}},
"sender":{"login":"agent-1","id":202,"node_id":"U_agent1","type":"User","site_admin":false},
"organization":{"login":"acme","id":1,"node_id":"O_acme","url":"https://api.github.com/orgs/acme"},
"installation":{"id":2002,"node_id":"MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMjAwMg=="}}`

func benchScope() Scope {
	return Scope{Projects: []Project{{Owner: "acme", Number: 1}}, Field: "Workflow State", AppLogin: "ralph-gate[bot]"}
}

// BenchmarkProjectsV2ItemHandle decodes an enforced Workflow State change and builds the
// queued change (the intake's CPU work besides the signature check and the insert).
func BenchmarkProjectsV2ItemHandle(b *testing.B) {
	h := &ProjectsV2Item{Scope: benchScope(), Queue: nopQueue{}}
	payload := []byte(fieldChangePayload)
	ctx := context.Background()
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if err := h.Handle(ctx, EventProjectsV2Item, "d-1", payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProjectsV2ItemIgnored is the same webhook for a project that is not enforced:
// decoded and dropped.
func BenchmarkProjectsV2ItemIgnored(b *testing.B) {
	scope := benchScope()
	scope.Projects = []Project{{Owner: "acme", Number: 2}}
	h := &ProjectsV2Item{Scope: scope, Queue: nopQueue{}}
	payload := []byte(fieldChangePayload)
	ctx := context.Background()
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if err := h.Handle(ctx, EventProjectsV2Item, "d-1", payload); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBenchmarkPayloadIsEnforced keeps the benchmark honest: its payload must reach the queue.
func TestBenchmarkPayloadIsEnforced(t *testing.T) {
	var got []enforce.Change
	h := &ProjectsV2Item{Scope: benchScope(), Queue: recordQueue{&got}}
	if err := h.Handle(context.Background(), EventProjectsV2Item, "d-1", []byte(fieldChangePayload)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].From != "Backlog" || got[0].To != "In Progress" || got[0].Actor != "agent-1" || got[0].ItemID != "PVTI_lADOBench" {
		t.Fatalf("the benchmark payload was not taken in as an enforced change: %+v", got)
	}
}

type recordQueue struct{ changes *[]enforce.Change }

func (q recordQueue) EnqueueChange(_ context.Context, ch enforce.Change) error {
	*q.changes = append(*q.changes, ch)
	return nil
}

func (recordQueue) EnqueueLifecycle(context.Context, enforce.Lifecycle) error { return nil }
