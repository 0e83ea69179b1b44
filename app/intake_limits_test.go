package app

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
)

const testSecret = "intake-test-secret"

func macOf(newHash func() hash.Hash, body []byte) string {
	m := hmac.New(newHash, []byte(testSecret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func sig256(body []byte) string { return "sha256=" + macOf(sha256.New, body) }

// bogus is well-formed (sha256= and 64 hex digits) but not the body's HMAC.
var bogus = "sha256=" + strings.Repeat("0", 64)

func xs(n int) []byte { return bytes.Repeat([]byte("x"), n) }

// source is an instrumented request body: data, or (data nil) size bytes of 'x' with nothing
// allocated per read. It counts itself in started on its first Read, gives at most step bytes
// per Read (0: no limit) and, when holdAt ≥ 0, stops after holdAt bytes, says so on held and
// waits for release.
type source struct {
	data                 []byte
	size, served, holdAt int64
	step                 int
	started              *atomic.Int64
	held                 chan<- struct{}
	release              <-chan struct{}
	first, stopped       bool
}

func (s *source) Read(p []byte) (int, error) {
	if !s.first {
		s.first = true
		if s.started != nil {
			s.started.Add(1)
		}
	}
	if s.holdAt >= 0 && s.served == s.holdAt && !s.stopped {
		s.stopped = true
		s.held <- struct{}{}
		<-s.release
	}
	if s.served == s.size {
		return 0, io.EOF
	}
	n := int64(len(p))
	n = min(n, s.size-s.served)
	if s.holdAt > s.served {
		n = min(n, s.holdAt-s.served)
	}
	if s.step > 0 {
		n = min(n, int64(s.step))
	}
	if s.data != nil {
		copy(p[:n], s.data[s.served:])
	} else {
		for i := range n {
			p[i] = 'x'
		}
	}
	s.served += n
	return int(n), nil
}

// webhook is a POST to the intake; length -1 sends the body without a declared length.
func webhook(ctx context.Context, body io.Reader, length int64, signature string) *http.Request {
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, WebhookRoute, body)
	r.ContentLength = length
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-GitHub-Event", "issues")
	r.Header.Set("X-GitHub-Delivery", "intake-test")
	if signature != "" {
		r.Header.Set("X-Hub-Signature-256", signature)
	}
	return r
}

// recorded is the dispatcher's handler for issues events: it keeps the payloads it is given.
type recorded struct {
	mu       sync.Mutex
	payloads [][]byte
}

func (h *recorded) Handles() []string { return []string{"issues"} }

func (h *recorded) Handle(_ context.Context, _, _ string, payload []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.payloads = append(h.payloads, bytes.Clone(payload))
	return nil
}

func (h *recorded) last() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.payloads) == 0 {
		return nil
	}
	return h.payloads[len(h.payloads)-1]
}

// dispatcher is go-githubapp's, as the app builds it: it checks the signature again itself.
func dispatcher(h *recorded) http.Handler {
	return githubapp.NewEventDispatcher([]githubapp.EventHandler{h}, testSecret, githubapp.WithErrorCallback(dispatchError))
}

func assertIdle(t *testing.T, in *intake) {
	t.Helper()
	if n := in.buffered.Load(); n != 0 {
		t.Errorf("%d bytes still counted as buffered", n)
	}
	if n := len(in.slots); n != 0 {
		t.Errorf("%d read slots still taken", n)
	}
	in.byAddr.mu.Lock()
	defer in.byAddr.mu.Unlock()
	if n := len(in.byAddr.held); n != 0 {
		t.Errorf("%d client addresses still hold slots", n)
	}
}

// X-Hub-Signature-256 is "sha256=" and 64 hex digits, once; nothing else.
func TestParseSignature(t *testing.T) {
	sum := macOf(sha256.New, []byte("{}"))
	tests := []struct {
		name   string
		values []string
		ok     bool
	}{
		{"sha256 and 64 lower-case hex digits", []string{"sha256=" + sum}, true},
		{"upper-case hex digits", []string{"sha256=" + strings.ToUpper(sum)}, true},
		{"missing", nil, false},
		{"empty", []string{""}, false},
		{"prefix only", []string{"sha256="}, false},
		{"digits only", []string{sum}, false},
		{"sha1 (X-Hub-Signature's scheme)", []string{"sha1=" + macOf(sha1.New, []byte("{}"))}, false},
		{"sha512", []string{"sha512=" + macOf(sha512.New, []byte("{}"))}, false},
		{"upper-case scheme", []string{"SHA256=" + sum}, false},
		{"63 digits", []string{"sha256=" + sum[:63]}, false},
		{"65 digits", []string{"sha256=" + sum + "0"}, false},
		{"not hex", []string{"sha256=" + strings.Repeat("g", 64)}, false},
		{"surrounding space", []string{" sha256=" + sum}, false},
		{"trailing space", []string{"sha256=" + sum + " "}, false},
		{"two headers", []string{"sha256=" + sum, "sha256=" + sum}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseSignature(tt.values)
			if ok != tt.ok {
				t.Fatalf("parseSignature(%q) ok = %v, want %v", tt.values, ok, tt.ok)
			}
			if ok && len(got) != sha256.Size {
				t.Fatalf("digest of %d bytes", len(got))
			}
		})
	}
}

// What the intake answers, whether it read the body, and what the dispatcher got: the body is
// hashed as it is read into buffers of the declared length (or chunks), never grown.
func TestIntakeReadsOnlyWhatItMust(t *testing.T) {
	const maxBody = 256 << 10
	small := []byte(`{"action":"opened"}`)
	multi := xs(3*chunkSize + 5) // several chunks without a declared length
	full := xs(maxBody)
	tests := []struct {
		name      string
		body      []byte
		size      int64 // bytes the source serves (len(body) unless set)
		length    int64 // declared; -1 none
		step      int
		signature string
		want      int
		read      bool  // whether any of the body is read
		peak      int64 // most buffered at once (0: not checked)
	}{
		{name: "declared length, valid", body: small, length: int64(len(small)), signature: sig256(small), want: http.StatusOK, read: true, peak: int64(len(small))},
		{name: "no declared length, several chunks, 7-byte reads", body: multi, length: -1, step: 7, signature: sig256(multi), want: http.StatusOK, read: true, peak: 4 * chunkSize},
		{name: "exactly max_body_bytes, declared", body: full, length: maxBody, signature: sig256(full), want: http.StatusOK, read: true, peak: maxBody},
		{name: "exactly max_body_bytes, not declared", body: full, length: -1, signature: sig256(full), want: http.StatusOK, read: true, peak: maxBody},
		{name: "empty body, valid", body: []byte{}, length: 0, signature: sig256(nil), want: http.StatusOK, read: true},
		{name: "one byte over, declared: refused unread", body: full, size: maxBody + 1, length: maxBody + 1, signature: sig256(xs(maxBody + 1)), want: http.StatusRequestEntityTooLarge},
		{name: "one byte over, not declared", body: full, size: maxBody + 1, length: -1, signature: sig256(xs(maxBody + 1)), want: http.StatusRequestEntityTooLarge, read: true, peak: maxBody},
		{name: "wrong secret", body: small, length: int64(len(small)), signature: bogus, want: http.StatusUnauthorized, read: true},
		{name: "missing signature: refused unread", body: full, length: maxBody, want: http.StatusUnauthorized},
		{name: "missing signature, oversized: refused unread", body: full, size: 10 * maxBody, length: -1, want: http.StatusUnauthorized},
		{name: "sha1 scheme: refused unread", body: small, length: int64(len(small)), signature: "sha1=" + macOf(sha1.New, small), want: http.StatusUnauthorized},
		{name: "sha512 scheme: refused unread", body: small, length: int64(len(small)), signature: "sha512=" + macOf(sha512.New, small), want: http.StatusUnauthorized},
		{name: "truncated digest: refused unread", body: small, length: int64(len(small)), signature: sig256(small)[:70], want: http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &recorded{}
			in := newIntake([]byte(testSecret), maxBody, 2, time.Hour, dispatcher(h))
			var started atomic.Int64
			src := &source{data: tt.body, size: int64(len(tt.body)), holdAt: -1, step: tt.step, started: &started}
			if tt.size != 0 {
				src.data, src.size = nil, tt.size // x's
			}
			rec := httptest.NewRecorder()
			in.ServeHTTP(rec, webhook(t.Context(), src, tt.length, tt.signature))
			if rec.Code != tt.want {
				t.Fatalf("status %d (%s), want %d", rec.Code, strings.TrimSpace(rec.Body.String()), tt.want)
			}
			if read := started.Load() > 0; read != tt.read {
				t.Errorf("body read: %v, want %v", read, tt.read)
			}
			if tt.want == http.StatusOK && !bytes.Equal(h.last(), tt.body) {
				t.Errorf("the dispatcher got %d bytes, want the %d sent", len(h.last()), len(tt.body))
			}
			if tt.want != http.StatusOK && h.last() != nil {
				t.Error("a refused webhook reached the dispatcher")
			}
			if tt.peak != 0 && in.peak.Load() != tt.peak {
				t.Errorf("buffered at most %d bytes, want %d", in.peak.Load(), tt.peak)
			}
			if in.peak.Load() > maxBody {
				t.Errorf("buffered %d bytes, over max_body_bytes %d", in.peak.Load(), maxBody)
			}
			assertIdle(t, in)
		})
	}
}

// A delivery that finds every read slot taken waits, then gets 503 with Retry-After without
// a byte of it read; a slot frees when its body is refused, and the next delivery gets it.
func TestIntakeAnswers503WhenEveryReadSlotIsBusy(t *testing.T) {
	h := &recorded{}
	// 10 ms: how long a delivery waits for a slot (the assertions do not depend on it).
	in := newIntake([]byte(testSecret), 1<<20, 1, 10*time.Millisecond, dispatcher(h))
	held, release := make(chan struct{}, 1), make(chan struct{})
	slow := &source{size: 1000, holdAt: 500, held: held, release: release}
	first := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		in.ServeHTTP(rec, webhook(t.Context(), slow, 1000, bogus))
		first <- rec.Code
	}()
	<-held // the only slot is taken by a body half read

	small := []byte(`{"action":"opened"}`)
	var started atomic.Int64
	rec := httptest.NewRecorder()
	in.ServeHTTP(rec, webhook(t.Context(), &source{data: small, size: int64(len(small)), holdAt: -1, started: &started}, int64(len(small)), sig256(small)))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != retryAfter {
		t.Fatalf("busy: status %d, Retry-After %q; want 503 and %s", rec.Code, rec.Header().Get("Retry-After"), retryAfter)
	}
	if started.Load() != 0 {
		t.Error("a delivery refused for want of a slot was read")
	}

	// A delivery whose sender has gone stops waiting at once.
	patient := newIntake([]byte(testSecret), 1<<20, 1, time.Hour, dispatcher(h))
	patient.slots <- struct{}{}
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	rec = httptest.NewRecorder()
	patient.ServeHTTP(rec, webhook(gone, bytes.NewReader(small), int64(len(small)), sig256(small)))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("sender gone: status %d, want 503", rec.Code)
	}

	close(release)
	if code := <-first; code != http.StatusUnauthorized {
		t.Fatalf("the slow body with a bad signature: %d, want 401", code)
	}
	rec = httptest.NewRecorder()
	in.ServeHTTP(rec, webhook(t.Context(), bytes.NewReader(small), int64(len(small)), sig256(small)))
	if rec.Code != http.StatusOK || !bytes.Equal(h.last(), small) {
		t.Fatalf("after the slot freed: status %d", rec.Code)
	}
	assertIdle(t, in)
}

// One client address holds at most half the read slots: 150 slow connections from one address
// once held all 16, and GitHub's deliveries of a person's move were answered 503 until the
// sweeper gave up. Another address is read meanwhile.
func TestIntakeKeepsSlotsForOtherAddresses(t *testing.T) {
	h := &recorded{}
	in := newIntake([]byte(testSecret), 1<<20, 4, 10*time.Millisecond, dispatcher(h))
	const stranger = "203.0.113.7:40000"
	var held []chan struct{}
	release := make(chan struct{})
	codes := make(chan int, 2)
	for range 2 {
		h := make(chan struct{}, 1)
		held = append(held, h)
		go func() {
			r := webhook(t.Context(), &source{size: 1000, holdAt: 500, held: h, release: release}, 1000, bogus)
			r.RemoteAddr = stranger
			rec := httptest.NewRecorder()
			in.ServeHTTP(rec, r)
			codes <- rec.Code
		}()
	}
	for _, h := range held {
		<-h // two slots, half of the four, held by the stranger's slow bodies
	}
	small := []byte(`{"action":"opened"}`)
	r := webhook(t.Context(), bytes.NewReader(small), int64(len(small)), sig256(small))
	r.RemoteAddr = stranger
	rec := httptest.NewRecorder()
	in.ServeHTTP(rec, r)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("a third body from the stranger: %d, want 503", rec.Code)
	}
	rec = httptest.NewRecorder()
	in.ServeHTTP(rec, webhook(t.Context(), bytes.NewReader(small), int64(len(small)), sig256(small))) // another address
	if rec.Code != http.StatusOK || !bytes.Equal(h.last(), small) {
		t.Fatalf("a delivery from another address while the stranger holds its half: %d", rec.Code)
	}
	close(release)
	for range 2 {
		if code := <-codes; code != http.StatusUnauthorized {
			t.Errorf("a slow body with a bad signature: %d, want 401", code)
		}
	}
	assertIdle(t, in)
}

func heapInuse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// 32 concurrent slow unauthenticated bodies of max_body_bytes hold at most
// max_concurrent_webhooks × max_body_bytes: the intake's own count of the buffers it holds
// never passes that, exactly max_concurrent_webhooks bodies have been read from while the
// readers are stalled, and the live heap grows by no more than that plus one body of slack.
func TestIntakeBoundsConcurrentUnauthenticatedBodies(t *testing.T) {
	const (
		n          = 32
		concurrent = 4
		maxBody    = 1 << 20
		bound      = concurrent * maxBody
	)
	tests := []struct {
		name   string
		size   int64 // bytes each sender sends
		length int64 // declared; -1 none
		sig    string
		want   int
	}{
		{"declared max_body_bytes, bad signature", maxBody, maxBody, bogus, http.StatusUnauthorized},
		{"undeclared and oversized, bad signature", maxBody + 100, -1, bogus, http.StatusRequestEntityTooLarge},
		{"undeclared and oversized, valid signature", maxBody + 100, -1, sig256(xs(maxBody + 100)), http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("a refused body reached the dispatcher") })
			in := newIntake([]byte(testSecret), maxBody, concurrent, time.Hour, next)
			var started atomic.Int64
			held, release := make(chan struct{}, n), make(chan struct{})
			base := heapInuse()
			codes := make(chan int, n)
			for i := range n {
				// Each sender stalls one byte short of max_body_bytes: its buffer is full. Each
				// comes from an address of its own (one address holds at most half the slots).
				src := &source{size: tt.size, holdAt: maxBody - 1, started: &started, held: held, release: release}
				go func() {
					rec := httptest.NewRecorder()
					r := webhook(t.Context(), src, tt.length, tt.sig)
					r.RemoteAddr = fmt.Sprintf("198.51.100.%d:40000", i+1)
					in.ServeHTTP(rec, r)
					codes <- rec.Code
				}()
			}
			for range concurrent {
				<-held
			}
			// Every slot is taken by a stalled body: nothing more can be read until release.
			grown := heapInuse() - base
			reading, buffered := started.Load(), in.buffered.Load()
			close(release)
			for range n {
				if code := <-codes; code != tt.want {
					t.Errorf("status %d, want %d", code, tt.want)
				}
			}
			t.Logf("%d senders, %d slots of %d bytes: %d bodies read at once, %d bytes buffered, heap +%d bytes; peak %d bytes buffered",
				n, concurrent, maxBody, reading, buffered, grown, in.peak.Load())
			if reading != concurrent {
				t.Errorf("%d bodies were being read at once, want max_concurrent_webhooks = %d", reading, concurrent)
			}
			if buffered > bound || in.peak.Load() > bound {
				t.Errorf("buffered %d bytes (peak %d), over max_concurrent_webhooks × max_body_bytes = %d", buffered, in.peak.Load(), bound)
			}
			if grown > bound+maxBody {
				t.Errorf("the heap grew by %d bytes while the bodies stalled, over %d", grown, bound+maxBody)
			}
			if started.Load() != n {
				t.Errorf("%d bodies read in all, want %d", started.Load(), n)
			}
			assertIdle(t, in)
		})
	}
}
