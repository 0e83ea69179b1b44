package store

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// Violation comments are kept per issue and actor: one actor's record never replaces
// another's, and the newest is whoever's was updated last.
func TestViolationCommentsPerActor(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		s := tg.open(t)
		puts := []struct {
			repo   string
			number int
			c      enforce.ViolationComment
		}{
			{"acme/web", 12, enforce.ViolationComment{Actor: "agent-1", CommentID: 1, NodeID: "IC_1", Count: 1, UpdatedAt: at(0), Body: "one"}},
			{"acme/web", 12, enforce.ViolationComment{Actor: "agent-2", CommentID: 2, NodeID: "IC_2", Count: 1, UpdatedAt: at(time.Second), Body: "two"}},
			{"acme/web", 12, enforce.ViolationComment{Actor: "agent-1", CommentID: 1, NodeID: "IC_1", Count: 2, UpdatedAt: at(2 * time.Second), Body: "one, again"}},
			{"acme/web", 13, enforce.ViolationComment{Actor: "agent-2", NodeID: "", Count: 1, UpdatedAt: at(3 * time.Second), Body: "pending"}},
		}
		for _, p := range puts {
			if err := s.PutViolationComment(ctx, p.repo, p.number, p.c); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			name   string
			number int
			actor  string
			want   enforce.ViolationComment
			absent bool
		}{
			{name: "updated", number: 12, actor: "agent-1", want: puts[2].c},
			{name: "not replaced by another actor's", number: 12, actor: "agent-2", want: puts[1].c},
			{name: "another issue", number: 13, actor: "agent-2", want: puts[3].c},
			{name: "an actor without one", number: 13, actor: "agent-1", absent: true},
			{name: "none recorded before actor keys", number: 12, actor: "", absent: true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.GetActorViolationComment(ctx, "acme/web", tt.number, tt.actor)
				if tt.absent {
					if !errors.Is(err, enforce.ErrNotFound) {
						t.Errorf("GetActorViolationComment = %+v, %v; want ErrNotFound", got, err)
					}
					return
				}
				if err != nil || got != tt.want {
					t.Errorf("GetActorViolationComment = %+v, %v; want %+v", got, err, tt.want)
				}
			})
		}
		if got, err := s.GetViolationComment(ctx, "acme/web", 12); err != nil || got != puts[2].c {
			t.Errorf("newest of #12 = %+v, %v; want %+v", got, err, puts[2].c)
		}
	})
}

// Version 4 keeps violation comments per actor in a table of their own; a database of
// version 3 keeps its comments there under actor "" (and its old table, for a replica of an
// older build during a rolling upgrade).
func TestMigrationKeepsCommentsPerActor(t *testing.T) {
	forEachDriver(t, func(t *testing.T, tg target) {
		ctx := t.Context()
		old := migrateTo(t, tg, 3)
		if relationExists(t, old, "violation_comments_by_actor") {
			t.Fatal("version 3 already has violation_comments_by_actor")
		}
		if _, err := old.DB().ExecContext(ctx, old.q(`INSERT INTO violation_comments (repo, issue_number, comment_id, node_id, count, body, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`), "acme/web", 12, 1001, "", 2, "pending body", old.t(at(0))); err != nil {
			t.Fatal(err)
		}
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}
		s := tg.open(t)
		if applied, err := s.AppliedMigrations(ctx); err != nil || len(applied) < 4 || !slices.Equal(applied[:4], []int{1, 2, 3, 4}) {
			t.Errorf("applied migrations = %v, %v", applied, err)
		}
		want := enforce.ViolationComment{CommentID: 1001, Count: 2, UpdatedAt: at(0), Body: "pending body"}
		if got, err := s.GetActorViolationComment(ctx, "acme/web", 12, ""); err != nil || got != want {
			t.Errorf("copied comment = %+v, %v; want %+v", got, err, want)
		}
		if !relationExists(t, s, "violation_comments") {
			t.Error("the old table is gone: a replica of an older build would fail")
		}
		if err := s.PutViolationComment(ctx, "acme/web", 12, enforce.ViolationComment{Actor: "agent-1", NodeID: "IC_2", Count: 1, UpdatedAt: at(time.Second)}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetActorViolationComment(ctx, "acme/web", 12, ""); err != nil || got != want {
			t.Errorf("after another actor's put: %+v, %v; want %+v", got, err, want)
		}
	})
}
