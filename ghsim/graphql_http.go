package ghsim

import (
	"context"
	"net/http"

	"github.com/vektah/gqlparser/v2/ast"
)

// serveGraphQL answers a prepared GraphQL request. Queries run under the world's read lock;
// mutations under its write lock, their webhooks queued in order before it is released.
func (s *Server) serveGraphQL(w http.ResponseWriter, ctx context.Context, g *gqlRequest) {
	if len(g.errs) > 0 {
		writeJSON(w, http.StatusOK, map[string]any{"errors": g.errs})
		return
	}
	who := principalFrom(ctx)
	schema, _ := loadSchema()
	ec := &execCtx{schema: schema, doc: g.doc, vars: g.vars, resolvers: s.resolvers, w: s.w, who: who, rate: rateFrom(ctx)}
	var out map[string]any
	if g.op.Operation == ast.Mutation {
		s.w.mu.Lock()
		out = ec.execute(g.op)
		s.flushLocked()
	} else {
		s.w.mu.RLock()
		out = ec.execute(g.op)
		s.w.mu.RUnlock()
	}
	writeJSON(w, http.StatusOK, out)
}
