// Package enforce holds the use cases shared by the webhook handlers, the MCP façade and the
// reconciler: observe a Workflow State change, ask policy for the decision, and act on it
// (revert, explain, record). It declares the interfaces it needs (Board for GitHub, Store for
// persistence) and never decides anything itself: every verdict comes from package policy.
//
// It must not import net/http, go-github or any GitHub client: ghboard implements Board.
package enforce
