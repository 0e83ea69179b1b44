package store

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"
)

// An organization's valid policy is kept with its commit; a refused push is recorded beside it
// and never replaces it; the next valid one clears the refusal; an uninstalled organization is
// forgotten. Owners are case-insensitive, as GitHub's logins are.
func TestOrgPolicies(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		if _, found, err := s.GetOrgPolicy(ctx, "acme"); err != nil || found {
			t.Fatalf("none yet: %v %v", found, err)
		}
		valid := OrgPolicy{Owner: "acme", InstallationID: 7, SHA: "aaa", Text: "projects: [{number: 1}]\n", LoadedAt: at, Pusher: "alice"}
		if err := s.PutOrgPolicy(ctx, valid); err != nil {
			t.Fatal(err)
		}
		if err := s.RefuseOrgPolicy(ctx, "Acme", 7, "bbb", "projects[0].mode: unknown", at.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		got, found, err := s.GetOrgPolicy(ctx, "ACME")
		want := valid
		want.RefusedSHA, want.RefusedAt, want.RefusedWhy = "bbb", at.Add(time.Minute), "projects[0].mode: unknown"
		if err != nil || !found || !reflect.DeepEqual(got, want) {
			t.Fatalf("after a refused push: %+v %v %v, want %+v", got, found, err, want)
		}
		// A refusal before any valid policy is kept on its own.
		if err := s.RefuseOrgPolicy(ctx, "globex", 8, "ccc", "(file): the file is empty", at); err != nil {
			t.Fatal(err)
		}
		next := OrgPolicy{Owner: "acme", InstallationID: 7, SHA: "ddd", Text: "projects: [{number: 2}]\n", LoadedAt: at.Add(2 * time.Minute)}
		if err := s.PutOrgPolicy(ctx, next); err != nil {
			t.Fatal(err)
		}
		all, err := s.OrgPolicies(ctx)
		wantAll := []OrgPolicy{next, {Owner: "globex", InstallationID: 8, RefusedSHA: "ccc", RefusedAt: at, RefusedWhy: "(file): the file is empty"}}
		if err != nil || !reflect.DeepEqual(all, wantAll) {
			t.Fatalf("all: %+v %v, want %+v", all, err, wantAll)
		}
		// Replacing is conditional on the policy in force: a replica that compared with an older
		// one writes nothing.
		newer := OrgPolicy{Owner: "acme", InstallationID: 7, SHA: "eee", Text: "projects: [{number: 3}]\n", LoadedAt: at.Add(3 * time.Minute), Pusher: "bob"}
		if ok, err := s.ReplaceOrgPolicy(ctx, newer, "aaa"); err != nil || ok {
			t.Fatalf("replacing a policy no longer in force: %v %v", ok, err)
		}
		if ok, err := s.ReplaceOrgPolicy(ctx, newer, "ddd"); err != nil || !ok {
			t.Fatalf("replacing the policy in force: %v %v", ok, err)
		}
		if ok, err := s.ReplaceOrgPolicy(ctx, OrgPolicy{Owner: "initech", SHA: "fff", Text: "x", LoadedAt: at}, ""); err != nil || !ok {
			t.Fatalf("the first policy of an organization: %v %v", ok, err)
		}
		if got, _, _ := s.GetOrgPolicy(ctx, "acme"); !reflect.DeepEqual(got, newer) {
			t.Fatalf("after replacing: %+v, want %+v", got, newer)
		}
		// An organization forgotten meanwhile (uninstalled) is not brought back by a replica
		// that compared with its policy.
		if ok, err := s.ReplaceOrgPolicy(ctx, OrgPolicy{Owner: "gone", SHA: "g2", Text: "x", LoadedAt: at}, "g1"); err != nil || ok {
			t.Fatalf("replacing the policy of an organization with none: %v %v", ok, err)
		}
		if err := s.ForgetOrgPolicy(ctx, "globex"); err != nil {
			t.Fatal(err)
		}
		if _, found, err := s.GetOrgPolicy(ctx, "globex"); err != nil || found {
			t.Fatalf("forgotten: %v %v", found, err)
		}
	})
}

// Every policy change is recorded with its pusher and outcome, and listed oldest first, by
// organization, since a time, the newest Limit.
func TestPolicyChanges(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		changes := []PolicyChange{
			{Owner: "acme", SHA: "aaa", At: at, Outcome: PolicyInForce, Summary: "first read"},
			{Owner: "acme", SHA: "bbb", Pusher: "agent-1", At: at.Add(time.Minute), Outcome: PolicyRefused,
				Reason: "agent-1 may not change acme's policy", Summary: "actors.bypass: + agent-1"},
			{Owner: "globex", SHA: "ccc", Pusher: "bob", At: at.Add(2 * time.Minute), Outcome: PolicyInForce},
			{Owner: "ACME", SHA: "ddd", Pusher: "alice", At: at.Add(3 * time.Minute), Outcome: PolicyInForce},
		}
		for _, c := range changes {
			if err := s.RecordPolicyChange(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.RecordPolicyChange(ctx, PolicyChange{Owner: "acme"}); err == nil {
			t.Error("a change without an outcome was recorded")
		}
		shas := func(f PolicyChangeFilter) string {
			t.Helper()
			got, err := s.PolicyChanges(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, c := range got {
				out = append(out, c.SHA)
			}
			return strings.Join(out, ",")
		}
		for _, tt := range []struct {
			f    PolicyChangeFilter
			want string
		}{
			{PolicyChangeFilter{}, "aaa,bbb,ccc,ddd"},
			{PolicyChangeFilter{Owner: "Acme"}, "aaa,bbb,ddd"},
			{PolicyChangeFilter{Owner: "acme", Since: at.Add(time.Minute)}, "bbb,ddd"},
			{PolicyChangeFilter{Limit: 2}, "ccc,ddd"},
		} {
			if got := shas(tt.f); got != tt.want {
				t.Errorf("%+v: %s, want %s", tt.f, got, tt.want)
			}
		}
		// A change is concluded in one transaction with what it does to the policy in force.
		in := OrgPolicy{Owner: "hooli", SHA: "h1", Text: "projects: [{number: 1}]\n", LoadedAt: at, Pusher: "gavin"}
		if has, err := s.HasPolicyRecord(ctx, "hooli"); err != nil || has {
			t.Fatalf("a new organization has a record: %v %v", has, err)
		}
		if ok, err := s.ConcludePolicyChange(ctx, PolicyChange{Owner: "hooli", SHA: "h1", Pusher: "gavin", At: at, Outcome: PolicyInForce}, &in, "", 9); err != nil || !ok {
			t.Fatalf("concluding a change put in force: %v %v", ok, err)
		}
		if ok, err := s.ConcludePolicyChange(ctx, PolicyChange{Owner: "hooli", SHA: "h2", Pusher: "bot", At: at, Outcome: PolicyInForce}, &in, "stale", 9); err != nil || ok {
			t.Fatalf("concluding over a policy no longer in force: %v %v", ok, err)
		}
		if ok, err := s.ConcludePolicyChange(ctx, PolicyChange{Owner: "hooli", SHA: "h3", Pusher: "agent-1", At: at, Outcome: PolicyRefused, Reason: "not an admin"}, nil, "", 9); err != nil || !ok {
			t.Fatalf("concluding a refused change: %v %v", ok, err)
		}
		if p, _, _ := s.GetOrgPolicy(ctx, "hooli"); p.SHA != "h1" || p.RefusedSHA != "h3" || p.RefusedWhy != "not an admin" {
			t.Errorf("after the changes: %+v", p)
		}
		if hs, _ := s.PolicyChanges(ctx, PolicyChangeFilter{Owner: "hooli"}); len(hs) != 2 || hs[0].SHA != "h1" || hs[1].SHA != "h3" {
			t.Errorf("the changes recorded: %+v (the one not concluded must not be)", hs)
		}
		if has, err := s.HasPolicyRecord(ctx, "HOOLI"); err != nil || !has {
			t.Fatalf("an organization with changes has no record: %v %v", has, err)
		}
		got, _ := s.PolicyChanges(ctx, PolicyChangeFilter{Owner: "acme", Limit: 1})
		want := changes[3]
		want.Owner, want.ID = "acme", got[0].ID
		if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Errorf("the newest: %+v, want %+v", got, want)
		}
	})
}

// A replica's notification reaches another's listener with the owner (PostgreSQL); with SQLite
// notifying does nothing and listening waits for the end.
func TestOrgPolicyNotifications(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		s := tg.open(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		got := make(chan string, 1)
		done := make(chan error, 1)
		listening := make(chan struct{})
		go func() {
			done <- s.ListenOrgPolicies(ctx, func() { close(listening) }, func(owner string) { got <- owner })
		}()
		<-listening
		if s.Driver() != DriverPostgres {
			if err := s.NotifyOrgPolicy(ctx, "acme"); err != nil {
				t.Fatal(err)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := s.NotifyOrgPolicy(ctx, "Acme"); err != nil {
			t.Fatal(err)
		}
		select {
		case owner := <-got:
			if owner != "acme" {
				t.Fatalf("heard %q, want acme", owner)
			}
		case <-time.After(time.Minute): // a bound on a hang
			t.Fatal("no notification heard")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
