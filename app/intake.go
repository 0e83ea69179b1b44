package app

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/handlers"
)

const (
	// slotWait is how long a delivery waits for a read slot before it is answered 503.
	slotWait = 2 * time.Second
	// retryAfter is the 503's Retry-After, in seconds. GitHub does not honour it (it records
	// a failed delivery, which the redelivery sweeper asks for again); other senders may.
	retryAfter = "10"
	// chunkSize is the buffer grown per step for a body of undeclared length (chunked).
	chunkSize = 32 << 10
	// signaturePrefix is the only scheme accepted in X-Hub-Signature-256.
	signaturePrefix = "sha256="
)

// intake bounds what an unauthenticated webhook can make the process hold, then checks the
// signature before go-githubapp's dispatcher runs, so that a bad signature is a 401 and an
// oversized body a 413 (not a generic 400):
//
//   - a missing or malformed X-Hub-Signature-256 (anything but "sha256=" and 64 hex digits,
//     so no sha1= or sha512=) is a 401 before a byte of the body is read;
//   - a declared Content-Length over the limit is a 413 before a byte is read;
//   - at most cap(slots) bodies are read at once, at most half of them from one client address
//     (a slow sender cannot hold every slot: GitHub delivers from others meanwhile; behind a
//     proxy that buffers bodies, as ingress-nginx does, none is held at all); a delivery that
//     finds no slot within slotWait is a 503 with Retry-After;
//   - the body is hashed as it is read, into one buffer sized by its declared length (or
//     grown in chunks, never copied), so at most cap(slots) × maxBody bytes of
//     unauthenticated body are reachable at any time (the garbage collector frees refused
//     ones later; the chart's GOMEMLIMIT makes it hurry near the memory limit);
//   - the HMAC is compared in constant time; the slot is released before the dispatcher
//     runs, and the dispatcher reads the same bytes and headers (it checks the signature
//     again, from X-Hub-Signature-256, which is well-formed by then).
type intake struct {
	secret   []byte
	maxBody  int64
	slots    chan struct{}
	byAddr   addrSlots // the slots each client address holds
	slotWait time.Duration
	next     http.Handler

	// buffered is the capacity of the buffers held by bodies being read (not yet
	// authenticated); peak is its high-water mark. Tests read both.
	buffered, peak atomic.Int64
}

// webhookIntake wraps the dispatcher with the intake's limits (server.max_body_bytes,
// server.max_concurrent_webhooks).
// A configuration that skipped validation gets the defaults rather than no slot at all.
func webhookIntake(secret []byte, server config.Server, next http.Handler) *intake {
	maxBody, concurrent := server.MaxBodyBytes, server.MaxConcurrentWebhooks
	if maxBody <= 0 {
		maxBody = config.DefaultMaxBodyBytes
	}
	if concurrent <= 0 {
		concurrent = config.DefaultMaxConcurrentWebhooks
	}
	return newIntake(secret, maxBody, concurrent, slotWait, next)
}

func newIntake(secret []byte, maxBody int64, concurrent int, wait time.Duration, next http.Handler) *intake {
	return &intake{secret: secret, maxBody: maxBody, slots: make(chan struct{}, concurrent), slotWait: wait, next: next,
		byAddr: addrSlots{per: max(1, concurrent/2), held: map[string]*addrEntry{}}}
}

func (in *intake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "webhooks are POSTed", http.StatusMethodNotAllowed)
		return
	}
	logger := zerolog.Ctx(r.Context())
	delivery := r.Header.Get(github.DeliveryIDHeader)
	want, ok := parseSignature(r.Header.Values(github.SHA256SignatureHeader))
	if !ok {
		logger.Warn().Str("delivery", delivery).Msg("refused a webhook with a missing or malformed X-Hub-Signature-256")
		refuse(w, "missing or malformed X-Hub-Signature-256 (want sha256= and 64 hex digits)", http.StatusUnauthorized)
		return
	}
	if r.ContentLength > in.maxBody {
		refuse(w, "webhook body too large", http.StatusRequestEntityTooLarge)
		return
	}
	if !in.acquire(r) {
		logger.Warn().Str("delivery", delivery).Int("max_concurrent_webhooks", cap(in.slots)).Msg("refused a webhook: every read slot is busy")
		w.Header().Set("Retry-After", retryAfter)
		refuse(w, "too many webhooks being read, retry later", http.StatusServiceUnavailable)
		return
	}
	body, sum, held, err := in.read(w, r)
	authentic := err == nil && hmac.Equal(sum, want)
	if !authentic {
		body = nil // dropped before its slot is freed
	}
	in.buffered.Add(-held)
	in.release(r)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			refuse(w, "webhook body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "could not read webhook body", http.StatusBadRequest)
		return
	}
	if !authentic {
		logger.Warn().Str("delivery", delivery).Msg("refused a webhook with a bad signature")
		http.Error(w, "bad X-Hub-Signature-256", http.StatusUnauthorized)
		return
	}
	r.Body = io.NopCloser(body)
	r.ContentLength = int64(body.Len())
	in.next.ServeHTTP(w, r)
}

// refuse answers before (or without) reading the whole body; the connection is closed
// after the answer rather than drained for reuse.
func refuse(w http.ResponseWriter, msg string, code int) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
}

// parseSignature accepts exactly one X-Hub-Signature-256 value of "sha256=" and 64 hex digits.
func parseSignature(values []string) ([]byte, bool) {
	if len(values) != 1 {
		return nil, false
	}
	digits, ok := strings.CutPrefix(values[0], signaturePrefix)
	if !ok || len(digits) != 2*sha256.Size {
		return nil, false
	}
	sum, err := hex.DecodeString(digits)
	if err != nil {
		return nil, false
	}
	return sum, true
}

// acquire takes one of its client address's slots and a read slot, waiting up to slotWait in
// all (or until the client goes away).
func (in *intake) acquire(r *http.Request) bool {
	timer := time.NewTimer(in.slotWait)
	defer timer.Stop()
	addr := clientAddr(r)
	if !in.byAddr.acquire(addr, timer.C, r.Context().Done()) {
		return false
	}
	select {
	case in.slots <- struct{}{}:
		return true
	default:
	}
	select {
	case in.slots <- struct{}{}:
		return true
	case <-timer.C:
	case <-r.Context().Done():
	}
	in.byAddr.release(addr)
	return false
}

// release gives back what acquire took.
func (in *intake) release(r *http.Request) {
	<-in.slots
	in.byAddr.release(clientAddr(r))
}

// clientAddr is the request's client address without its port (the peer: a forwarded-for
// header is anyone's to write).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// addrSlots bounds the read slots one client address holds at once.
type addrSlots struct {
	mu   sync.Mutex
	per  int
	held map[string]*addrEntry
}

type addrEntry struct {
	slots chan struct{}
	users int // holders and waiters: the entry is forgotten when none is left
}

// acquire takes one of addr's slots, waiting until timeout or done.
func (a *addrSlots) acquire(addr string, timeout <-chan time.Time, done <-chan struct{}) bool {
	a.mu.Lock()
	e := a.held[addr]
	if e == nil {
		e = &addrEntry{slots: make(chan struct{}, a.per)}
		a.held[addr] = e
	}
	e.users++
	a.mu.Unlock()
	select {
	case e.slots <- struct{}{}:
		return true
	default:
	}
	select {
	case e.slots <- struct{}{}:
		return true
	case <-timeout:
	case <-done:
	}
	a.forget(addr, e)
	return false
}

// release gives back one of addr's slots.
func (a *addrSlots) release(addr string) {
	a.mu.Lock()
	e := a.held[addr]
	a.mu.Unlock()
	if e == nil {
		return
	}
	<-e.slots
	a.forget(addr, e)
}

func (a *addrSlots) forget(addr string, e *addrEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e.users--; e.users == 0 {
		delete(a.held, addr)
	}
}

// read reads the body (at most maxBody bytes) through the HMAC into buffers that are never
// copied or grown: one of the declared length, or chunkSize steps for a body of undeclared
// length (a buffer is allocated only once a byte for it has arrived). It returns the body,
// the HMAC of what was read, the bytes it allocated (added to in.buffered: the caller
// subtracts them once the body is authenticated or dropped) and the read error (a
// *http.MaxBytesError past maxBody).
func (in *intake) read(w http.ResponseWriter, r *http.Request) (*chunks, []byte, int64, error) {
	src := http.MaxBytesReader(w, r.Body, in.maxBody)
	mac := hmac.New(sha256.New, in.secret)
	body := &chunks{}
	var held int64
	grow := func(size int64) {
		body.bufs = append(body.bufs, make([]byte, 0, size))
		held += size
		in.note(in.buffered.Add(size))
	}
	if r.ContentLength > 0 {
		grow(r.ContentLength) // at most maxBody: larger declared lengths were refused
	}
	var one [1]byte // where a read goes while every buffer is full
	for {
		dst, spare := one[:], true
		cur := body.last()
		if cur != nil && len(*cur) < cap(*cur) {
			dst, spare = (*cur)[len(*cur):cap(*cur)], false
		}
		n, err := src.Read(dst)
		mac.Write(dst[:n])
		switch {
		case n > 0 && !spare:
			*cur = (*cur)[:len(*cur)+n]
		case n > 0:
			// More than the buffers hold: MaxBytesReader gave this byte, so at least one
			// more fits under maxBody.
			grow(min(chunkSize, in.maxBody-body.len()))
			cur = body.last()
			*cur = append(*cur, one[0])
		}
		if err == io.EOF {
			return body, mac.Sum(nil), held, nil
		}
		if err != nil {
			return nil, nil, held, err
		}
	}
}

// note raises the high-water mark of buffered bytes to v.
func (in *intake) note(v int64) {
	for {
		p := in.peak.Load()
		if v <= p || in.peak.CompareAndSwap(p, v) {
			return
		}
	}
}

// chunks is a body read into buffers filled in order; it reads back as one stream.
type chunks struct {
	bufs [][]byte
	r    io.Reader
}

func (c *chunks) last() *[]byte {
	if len(c.bufs) == 0 {
		return nil
	}
	return &c.bufs[len(c.bufs)-1]
}

func (c *chunks) len() int64 {
	var n int64
	for _, b := range c.bufs {
		n += int64(len(b))
	}
	return n
}

// Len is the number of bytes read.
func (c *chunks) Len() int { return int(c.len()) }

func (c *chunks) Read(p []byte) (int, error) {
	if c.r == nil {
		readers := make([]io.Reader, len(c.bufs))
		for i, b := range c.bufs {
			readers[i] = bytes.NewReader(b)
		}
		c.r = io.MultiReader(readers...)
	}
	return c.r.Read(p)
}

// dispatchError maps handler failures to status codes: the sender's fault is 4xx; ours is
// 5xx, which GitHub records as a failed delivery that the redelivery sweeper retries.
func dispatchError(w http.ResponseWriter, r *http.Request, err error) {
	logger := zerolog.Ctx(r.Context())
	var ve githubapp.ValidationError
	switch {
	case errors.Is(err, errHeld):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintln(w, err)
	case errors.As(err, &ve), errors.Is(err, handlers.ErrMalformed):
		logger.Warn().Err(err).Msg("refused a malformed webhook")
		http.Error(w, "malformed webhook", http.StatusBadRequest)
	default:
		logger.Error().Err(err).Msg("could not take in a webhook")
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
	}
}
