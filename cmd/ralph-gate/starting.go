package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
)

// A pod whose GitHub is unreachable when it starts (an outage, DNS, a 502 on GET /app) stays
// up rather than exiting into a crash loop: it holds its port, answers /healthz 200 and
// /readyz 503 with the reason (every other route 503 with Retry-After: GitHub redelivers), and
// tries to authenticate again with backoff, 1 s doubling to 30 s, until GitHub answers
// (docs/TROUBLESHOOTING.md). Wrong credentials still stop it at once: waiting fixes nothing.

// starting is the port's answer while the App waits for GitHub.
type starting struct {
	srv    *http.Server
	reason atomic.Value // string: why it is not ready
}

// serveStarting answers on ln until stop.
func serveStarting(ln net.Listener) *starting {
	s := &starting{}
	s.reason.Store("starting")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "10")
		http.Error(w, "not ready: "+s.reason.Load().(string), http.StatusServiceUnavailable)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s
}

// notReady sets why the port is not ready.
func (s *starting) notReady(why string) { s.reason.Store(why) }

// stop closes the port (and its listener).
func (s *starting) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

// Backoff between two tries to authenticate with GitHub at start.
const (
	firstStartRetry = time.Second
	maxStartRetry   = 30 * time.Second
)

// newWhenGitHubAnswers builds the app, trying again while GitHub cannot be reached; another
// error, or ctx's end, is returned.
func newWhenGitHubAnswers(ctx context.Context, cfg config.Config, wait *starting) (*app.App, error) {
	log := zerolog.Ctx(ctx)
	delay := firstStartRetry
	for {
		a, err := app.New(ctx, cfg, app.Options{Version: version, CheckBoards: true})
		if err == nil || !errors.Is(err, app.ErrGitHubUnavailable) {
			return a, err
		}
		wait.notReady("waiting for GitHub: " + err.Error())
		log.Warn().Err(err).Int64("retry_after_ms", delay.Milliseconds()).Msg("GitHub cannot be reached yet: not ready, trying again")
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, maxStartRetry)
	}
}
