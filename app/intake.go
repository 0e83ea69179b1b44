package app

import (
	"bytes"
	"errors"
	"io"
	"net/http"

	"github.com/google/go-github/v89/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/handlers"
)

// webhookIntake bounds the body and checks the signature before go-githubapp's dispatcher
// runs, so that a bad signature is a 401 and an oversized body a 413 (not a generic 400).
func webhookIntake(secret []byte, maxBody int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "webhooks are POSTed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "webhook body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "could not read webhook body", http.StatusBadRequest)
			return
		}
		sig := r.Header.Get(github.SHA256SignatureHeader)
		if sig == "" || github.ValidateSignature(sig, body, secret) != nil {
			zerolog.Ctx(r.Context()).Warn().Str("delivery", r.Header.Get(github.DeliveryIDHeader)).Msg("refused a webhook with a missing or bad signature")
			http.Error(w, "bad or missing X-Hub-Signature-256", http.StatusUnauthorized)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// dispatchError maps handler failures to status codes: the sender's fault is 4xx; ours is
// 5xx, which GitHub records as a failed delivery that the redelivery sweeper retries.
func dispatchError(w http.ResponseWriter, r *http.Request, err error) {
	logger := zerolog.Ctx(r.Context())
	var ve githubapp.ValidationError
	switch {
	case errors.As(err, &ve), errors.Is(err, handlers.ErrMalformed):
		logger.Warn().Err(err).Msg("refused a malformed webhook")
		http.Error(w, "malformed webhook", http.StatusBadRequest)
	default:
		logger.Error().Err(err).Msg("could not take in a webhook")
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
	}
}
