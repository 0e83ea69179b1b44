package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/sandbox"
)

func sign(secret string, body []byte) string { return signWith(sha256.New, "sha256=", secret, body) }

func signWith(newHash func() hash.Hash, scheme, secret string, body []byte) string {
	mac := hmac.New(newHash, []byte(secret))
	mac.Write(body)
	return scheme + hex.EncodeToString(mac.Sum(nil))
}

// TestWebhookIntake checks the answers GitHub gets, over real HTTP.
func TestWebhookIntake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := sandbox.Start(ctx, sandbox.Options{Configure: func(c *config.Config) {
		c.Server.MaxBodyBytes = 64 << 10
		c.Logging.Level = "error"
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	secret := sb.Config.GitHub.App.WebhookSecret
	payload, err := os.ReadFile(filepath.Join("..", "ghsim", "testdata", "payloads", "SYNTHESIZED_projects_v2_item_edited_single_select_from_to.json"))
	if err != nil {
		t.Fatal(err)
	}
	chunked := append(bytes.Clone(payload), '\n') // another body: the first's again would be held as a replay
	big := bytes.Repeat([]byte("x"), 70<<10)
	tests := []struct {
		name    string
		event   string
		body    []byte
		sig     string
		method  string
		want    int
		chunked bool        // sent without a Content-Length
		more    http.Header // added to the request's headers
	}{
		{"valid but for another org's project: taken in and ignored", "projects_v2_item", payload, sign(secret, payload), "POST", http.StatusOK, false, nil},
		{"bad signature", "projects_v2_item", payload, sign("wrong", payload), "POST", http.StatusUnauthorized, false, nil},
		{"missing signature", "projects_v2_item", payload, "", "POST", http.StatusUnauthorized, false, nil},
		{"malformed body", "projects_v2_item", []byte(`{"action":`), sign(secret, []byte(`{"action":`)), "POST", http.StatusBadRequest, false, nil},
		{"wrong shape", "projects_v2_item", []byte(`{"action":"edited","projects_v2_item":"nope"}`), sign(secret, []byte(`{"action":"edited","projects_v2_item":"nope"}`)), "POST", http.StatusBadRequest, false, nil},
		{"oversized body", "projects_v2_item", big, sign(secret, big), "POST", http.StatusRequestEntityTooLarge, false, nil},
		{"unknown event is acknowledged", "star", []byte(`{"action":"created"}`), sign(secret, []byte(`{"action":"created"}`)), "POST", http.StatusAccepted, false, nil},
		{"missing event header", "", payload, sign(secret, payload), "POST", http.StatusBadRequest, false, nil},
		{"GET is not a webhook", "projects_v2_item", nil, "", "GET", http.StatusMethodNotAllowed, false, nil},
		// X-Hub-Signature-256 is "sha256=" and 64 hex digits, nothing else (go-github would take these).
		{"sha1 scheme in X-Hub-Signature-256", "projects_v2_item", payload, signWith(sha1.New, "sha1=", secret, payload), "POST", http.StatusUnauthorized, false, nil},
		{"sha512 scheme in X-Hub-Signature-256", "projects_v2_item", payload, signWith(sha512.New, "sha512=", secret, payload), "POST", http.StatusUnauthorized, false, nil},
		{"two X-Hub-Signature-256 headers", "projects_v2_item", payload, sign(secret, payload), "POST", http.StatusUnauthorized, false,
			http.Header{"X-Hub-Signature-256": {sign("wrong", payload)}}},
		{"only X-Hub-Signature (sha1)", "projects_v2_item", payload, "", "POST", http.StatusUnauthorized, false,
			http.Header{"X-Hub-Signature": {signWith(sha1.New, "sha1=", secret, payload)}}},
		{"truncated signature", "projects_v2_item", payload, sign(secret, payload)[:40], "POST", http.StatusUnauthorized, false, nil},
		{"oversized and unsigned: refused for the signature, unread", "projects_v2_item", big, "", "POST", http.StatusUnauthorized, false, nil},
		{"valid, sent chunked", "projects_v2_item", chunked, sign(secret, chunked), "POST", http.StatusOK, true, nil},
		{"the first one's signed body again under another id: held as a replay", "projects_v2_item", payload, sign(secret, payload), "POST", http.StatusAccepted, false, nil},
		{"oversized, sent chunked", "projects_v2_item", big, sign(secret, big), "POST", http.StatusRequestEntityTooLarge, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = bytes.NewReader(tt.body)
			if tt.chunked {
				body = io.MultiReader(body) // not a type NewRequest can measure: no Content-Length
			}
			req, _ := http.NewRequestWithContext(ctx, tt.method, sb.AppURL+app.WebhookRoute, body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Delivery", "test-"+strings.ReplaceAll(tt.name, " ", "-"))
			if tt.event != "" {
				req.Header.Set("X-GitHub-Event", tt.event)
			}
			if tt.sig != "" {
				req.Header.Set("X-Hub-Signature-256", tt.sig)
			}
			for k, vs := range tt.more {
				for _, v := range vs {
					req.Header.Add(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(sb.AppURL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
}

func TestNewRefusesWithoutSecrets(t *testing.T) {
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.New(context.Background(), cfg, app.Options{})
	if err == nil {
		t.Fatal("started without an app id, a webhook secret and a key")
	}
	for _, want := range []string{"github.app.integration_id", "github.app.webhook_secret", "github.app.private_key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
	// No projects is no problem: each organization's policy is read from its repository.
	if strings.Contains(err.Error(), "projects") {
		t.Errorf("error names projects: %v", err)
	}
}
