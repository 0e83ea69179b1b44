package mcpserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Route is where the façade is served.
const Route = "/mcp"

// Credential is an agent's token, kept only as its SHA-256.
type Credential struct {
	Name string
	Hash [sha256.Size]byte
}

// verifier authenticates bearer tokens against the configured agents in constant time: every
// credential is compared, whatever matched, so the time taken says nothing about the token.
func verifier(creds []Credential) auth.TokenVerifier {
	return func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		sum := sha256.Sum256([]byte(token))
		match := -1
		for i := range creds {
			if subtle.ConstantTimeCompare(sum[:], creds[i].Hash[:]) == 1 {
				match = i
			}
		}
		if match < 0 {
			return nil, fmt.Errorf("unknown token: %w", auth.ErrInvalidToken)
		}
		// The façade's tokens do not expire; the agent's name ties a session to its agent.
		return &auth.TokenInfo{UserID: creds[match].Name, Expiration: time.Now().Add(time.Hour)}, nil
	}
}

// Handler serves the façade over Streamable HTTP behind bearer-token authentication: a request
// without a known token gets 401 before any tool runs, and a JSON-RPC batch of more than
// l.MaxBatch messages gets 400 before any is handled. The transport is stateless with JSON
// responses, so any replica answers any request (no sticky sessions) and nothing is held open.
func Handler(srv *mcp.Server, creds []Credential, l Limits) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		MaxRequestBodyBytes: maxBody,
	})
	return auth.RequireBearerToken(verifier(creds), &auth.RequireBearerTokenOptions{})(limitBatches(h, l))
}
