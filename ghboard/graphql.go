// Package ghboard is the GitHub adapter: it implements enforce.Board with GitHub's GraphQL API
// (one document per operation, listed in documents.go so the simulator's schema test can
// validate every one of them). It decides nothing.
package ghboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxResponse bounds how much of a GraphQL response is read.
const maxResponse = 32 << 20

// RateLimitError is returned when GitHub asks the caller to wait: a secondary limit (403/429
// with retry-after) or an exhausted primary budget (403, or HTTP 200 with a RATE_LIMITED error).
type RateLimitError struct {
	RetryAfter time.Duration
	Secondary  bool
	Message    string
}

func (e *RateLimitError) Error() string {
	kind := "primary"
	if e.Secondary {
		kind = "secondary"
	}
	return fmt.Sprintf("github %s rate limit: retry after %s: %s", kind, e.RetryAfter, e.Message)
}

// ServerError is a 5xx or transport failure worth retrying.
type ServerError struct {
	Status int
	Err    error
}

func (e *ServerError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("github unavailable: %v", e.Err)
	}
	return fmt.Sprintf("github answered %d", e.Status)
}

func (e *ServerError) Unwrap() error { return e.Err }

// GraphQLError is a GraphQL error that retrying will not fix (bad document, not found, …).
type GraphQLError struct {
	Messages []string
	Types    []string
}

func (e *GraphQLError) Error() string {
	return "github graphql: " + strings.Join(e.Messages, "; ")
}

// Client posts GraphQL documents with an authenticated HTTP client.
type Client struct {
	http *http.Client
	url  string
	now  func() time.Time
}

// NewClient returns a client for the GraphQL endpoint url (e.g. https://api.github.com/graphql).
func NewClient(h *http.Client, url string) *Client {
	return &Client{http: h, url: url, now: time.Now}
}

type gqlRequest struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables,omitempty"`
}

type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"errors"`
}

// Do runs one document and decodes its data into out.
func (c *Client) Do(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(gqlRequest{Query: query, Variables: vars})
	if err != nil {
		return fmt.Errorf("encode graphql request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build graphql request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &ServerError{Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return &ServerError{Err: fmt.Errorf("read graphql response: %w", err)}
	}
	if err := c.classifyStatus(resp, data); err != nil {
		return err
	}
	var r gqlResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("decode graphql response: %w", err)
	}
	if len(r.Errors) > 0 {
		ge := &GraphQLError{}
		for _, e := range r.Errors {
			if e.Type == "RATE_LIMITED" {
				return &RateLimitError{RetryAfter: c.untilReset(resp.Header), Message: e.Message}
			}
			ge.Messages = append(ge.Messages, e.Message)
			ge.Types = append(ge.Types, e.Type)
		}
		return ge
	}
	if out != nil {
		if err := json.Unmarshal(r.Data, out); err != nil {
			return fmt.Errorf("decode graphql data: %w", err)
		}
	}
	return nil
}

func (c *Client) classifyStatus(resp *http.Response, body []byte) error {
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests:
		msg := errorMessage(body)
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			secs, err := strconv.Atoi(strings.TrimSpace(ra))
			if err == nil && secs >= 0 {
				return &RateLimitError{RetryAfter: time.Duration(secs) * time.Second, Secondary: true, Message: msg}
			}
		}
		if resp.Header.Get("X-Ratelimit-Remaining") == "0" {
			return &RateLimitError{RetryAfter: c.untilReset(resp.Header), Message: msg}
		}
		if strings.Contains(strings.ToLower(msg), "secondary rate limit") {
			// GitHub's advice without retry-after: wait at least a minute.
			return &RateLimitError{RetryAfter: time.Minute, Secondary: true, Message: msg}
		}
		return fmt.Errorf("github refused (%d): %s", resp.StatusCode, msg)
	case resp.StatusCode >= 500:
		return &ServerError{Status: resp.StatusCode}
	default:
		return fmt.Errorf("github answered %d: %s", resp.StatusCode, errorMessage(body))
	}
}

// untilReset reads x-ratelimit-reset (epoch seconds); at least one second.
func (c *Client) untilReset(h http.Header) time.Duration {
	reset, err := strconv.ParseInt(h.Get("X-Ratelimit-Reset"), 10, 64)
	if err != nil {
		return time.Minute
	}
	d := time.Unix(reset, 0).Sub(c.now())
	if d < time.Second {
		d = time.Second
	}
	return d
}

func errorMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		return e.Message
	}
	if len(body) > 200 {
		body = body[:200]
	}
	return string(body)
}

// IsRetryable reports whether err is worth retrying later.
func IsRetryable(err error) bool {
	var se *ServerError
	var rl *RateLimitError
	return errors.As(err, &se) || errors.As(err, &rl)
}

// RetryAfterDuration tells the job queue when to try again.
func (e *RateLimitError) RetryAfterDuration() time.Duration { return e.RetryAfter }
