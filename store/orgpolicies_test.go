package store

import (
	"context"
	"reflect"
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
		valid := OrgPolicy{Owner: "acme", InstallationID: 7, SHA: "aaa", Text: "projects: [{number: 1}]\n", LoadedAt: at}
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
		if err := s.ForgetOrgPolicy(ctx, "globex"); err != nil {
			t.Fatal(err)
		}
		if _, found, err := s.GetOrgPolicy(ctx, "globex"); err != nil || found {
			t.Fatalf("forgotten: %v %v", found, err)
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
