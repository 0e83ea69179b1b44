package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
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

func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
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
	big := bytes.Repeat([]byte("x"), 70<<10)
	tests := []struct {
		name   string
		event  string
		body   []byte
		sig    string
		method string
		want   int
	}{
		{"valid but for another org's project: taken in and ignored", "projects_v2_item", payload, sign(secret, payload), "POST", http.StatusOK},
		{"bad signature", "projects_v2_item", payload, sign("wrong", payload), "POST", http.StatusUnauthorized},
		{"missing signature", "projects_v2_item", payload, "", "POST", http.StatusUnauthorized},
		{"malformed body", "projects_v2_item", []byte(`{"action":`), sign(secret, []byte(`{"action":`)), "POST", http.StatusBadRequest},
		{"wrong shape", "projects_v2_item", []byte(`{"action":"edited","projects_v2_item":"nope"}`), sign(secret, []byte(`{"action":"edited","projects_v2_item":"nope"}`)), "POST", http.StatusBadRequest},
		{"oversized body", "projects_v2_item", big, sign(secret, big), "POST", http.StatusRequestEntityTooLarge},
		{"unknown event is acknowledged", "star", []byte(`{"action":"created"}`), sign(secret, []byte(`{"action":"created"}`)), "POST", http.StatusAccepted},
		{"missing event header", "", payload, sign(secret, payload), "POST", http.StatusBadRequest},
		{"GET is not a webhook", "projects_v2_item", nil, "", "GET", http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(ctx, tt.method, sb.AppURL+app.WebhookRoute, bytes.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Delivery", "test-"+strings.ReplaceAll(tt.name, " ", "-"))
			if tt.event != "" {
				req.Header.Set("X-GitHub-Event", tt.event)
			}
			if tt.sig != "" {
				req.Header.Set("X-Hub-Signature-256", tt.sig)
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
		t.Fatal("started without an app id, a webhook secret, a key and projects")
	}
	for _, want := range []string{"github.app.integration_id", "github.app.webhook_secret", "github.app.private_key", "projects"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
}
