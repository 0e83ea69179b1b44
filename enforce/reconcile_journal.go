package enforce

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/marker"
	"github.com/ralph-gate/ralph-gate/store"
)

// CommentFinder is implemented by a Board that can look for a comment the app wrote on an issue
// or pull request (by node id) whose body contains a text. Enforcement uses it only to settle a
// comment whose posting was interrupted, so that a crash never leads to a second comment.
type CommentFinder interface {
	FindComment(ctx context.Context, subjectID, contains string) (c Comment, found bool, err error)
}

// settlePending resolves a violation comment recorded as about to be posted (NodeID ""): when
// GitHub has it, the record gets its ids; when not, the record stays pending and the caller
// posts it.
func (s *Service) settlePending(ctx context.Context, b Board, it Item, prev store.ViolationComment) (store.ViolationComment, error) {
	f, ok := b.(CommentFinder)
	if !ok {
		return prev, nil
	}
	markers, _ := marker.ParseTransitions(prev.Body)
	if len(markers) == 0 {
		return prev, nil
	}
	// The newest marker identifies the comment: it is unique to one refused move.
	needle := markers[len(markers)-1].String()
	c, found, err := f.FindComment(ctx, it.ContentID, needle)
	if err != nil {
		return prev, fmt.Errorf("look for an interrupted violation comment: %w", err)
	}
	if !found {
		return prev, nil
	}
	prev.NodeID, prev.CommentID = c.ID, c.DatabaseID
	if err := s.store.PutViolationComment(ctx, it.Repo, it.Number, prev); err != nil {
		return prev, fmt.Errorf("record the violation comment: %w", err)
	}
	zerolog.Ctx(ctx).Info().Str("comment", c.ID).Msg("found an interrupted violation comment on GitHub")
	return prev, nil
}
