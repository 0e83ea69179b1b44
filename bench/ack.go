package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/ralph-gate/ralph-gate/app"
)

// ack sends signed projects_v2_item webhooks straight to the app at a steady rate, as GitHub
// would, and times each from the request's start to the end of the response (client side).
// Each names a different real item, so each is a change the app durably queues (200) and then
// processes while the next ones arrive.
func (h *harness) ack(ctx context.Context, r *Result) error {
	o := h.o
	h.o.progress("webhook acknowledgement: %d signed webhooks at %d/s", len(h.l.ack), o.Rate)
	template, err := h.payloadTemplate()
	if err != nil {
		return err
	}
	state := h.sb.Sim.State()
	bodies := make([][]byte, 0, len(h.l.ack))
	for _, n := range h.l.ack {
		is, ok := state.Issue(repo, n)
		if !ok || is.ItemID == "" {
			return fmt.Errorf("issue #%d has no project item", n)
		}
		b, err := template(is.ItemID, is.NodeID)
		if err != nil {
			return err
		}
		bodies = append(bodies, b)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}
	url := h.sb.AppURL + app.WebhookRoute
	secret := []byte(h.sb.Config.GitHub.App.WebhookSecret)
	nonce := randomHex(4)

	var mu sync.Mutex
	var took []time.Duration
	failed := 0
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(o.Rate)
	next := time.Now()
	for i, body := range bodies {
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
		next = next.Add(interval)
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, ok := post(ctx, client, url, secret, fmt.Sprintf("bench-%s-%06d", nonce, i), body)
			mu.Lock()
			defer mu.Unlock()
			if !ok {
				failed++
				return
			}
			took = append(took, d)
		}()
	}
	wg.Wait()
	client.CloseIdleConnections()
	r.AckRate, r.AckWebhooks, r.AckFailed = o.Rate, len(bodies), failed
	r.AckP50MS, r.AckP99MS, r.AckMaxMS = num(percentile(took, 50)), num(percentile(took, 99)), num(percentile(took, 100))
	h.o.progress("waiting for the acknowledged changes to be processed")
	return h.settle(ctx)
}

// post sends one signed webhook and reports how long until the whole answer was read, and
// whether it was a 200 (durably queued).
func post(ctx context.Context, client *http.Client, url string, secret []byte, delivery string, body []byte) (time.Duration, bool) {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/bench")
	req.Header.Set("X-GitHub-Event", "projects_v2_item")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(start), resp.StatusCode == http.StatusOK
}

// payloadTemplate takes a real delivery of the warm-up (a person's legal move from Research
// Needed to Ready for Plan, as the simulator sent it) and returns a function that retargets it
// to another item; the acknowledgement items are seeded in Ready for Plan, so each webhook is
// a true statement about the board.
func (h *harness) payloadTemplate() (func(itemID, contentID string) ([]byte, error), error) {
	for _, d := range h.sb.Sim.Deliveries() {
		if d.Event != "projects_v2_item" || d.Action != "edited" {
			continue
		}
		var p map[string]any
		if err := json.Unmarshal(d.Payload(), &p); err != nil {
			return nil, fmt.Errorf("decode a delivery: %w", err)
		}
		sender, _ := p["sender"].(map[string]any)
		if sender["login"] != humans[0] {
			continue
		}
		raw, _ := json.Marshal(p)
		return func(itemID, contentID string) ([]byte, error) {
			var q map[string]any
			if err := json.Unmarshal(raw, &q); err != nil {
				return nil, err
			}
			it, ok := q["projects_v2_item"].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("a projects_v2_item delivery without projects_v2_item")
			}
			it["node_id"], it["content_node_id"] = itemID, contentID
			it["updated_at"] = time.Now().UTC().Format(time.RFC3339)
			return json.Marshal(q)
		}, nil
	}
	return nil, fmt.Errorf("no warm-up delivery to take a payload from")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
