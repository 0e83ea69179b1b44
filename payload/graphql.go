package payload

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RateLimitError is GitHub asking the caller to wait: a secondary limit (403/429 with
// retry-after) or an exhausted primary budget (403 with x-ratelimit-remaining 0, or HTTP 200
// with a RATE_LIMITED GraphQL error). RetryAfter is never shorter than GitHub asked.
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

// RetryAfterDuration tells a job queue when to try again.
func (e *RateLimitError) RetryAfterDuration() time.Duration { return e.RetryAfter }

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

// Rate is GitHub's primary budget as the x-ratelimit-* headers report it.
type Rate struct {
	Limit, Remaining, Used int
	Reset                  time.Time
	Resource               string
}

// RateFromHeaders reads the x-ratelimit-* headers; ok is false when they are absent or broken.
func RateFromHeaders(h http.Header) (r Rate, ok bool) {
	limit, err1 := strconv.Atoi(h.Get("X-Ratelimit-Limit"))
	remaining, err2 := strconv.Atoi(h.Get("X-Ratelimit-Remaining"))
	reset, err3 := strconv.ParseInt(h.Get("X-Ratelimit-Reset"), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || limit <= 0 || remaining < 0 {
		return Rate{}, false
	}
	used, err := strconv.Atoi(h.Get("X-Ratelimit-Used"))
	if err != nil || used < 0 {
		used = max(limit-remaining, 0)
	}
	return Rate{Limit: limit, Remaining: remaining, Used: used, Reset: time.Unix(reset, 0), Resource: h.Get("X-Ratelimit-Resource")}, true
}

// RetryAfter reads a Retry-After header: delay-seconds or an HTTP date (RFC 9110).
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 || secs > 24*3600 {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d <= 24*time.Hour {
			return max(d, 0), true
		}
	}
	return 0, false
}

// UntilReset is how long until x-ratelimit-reset (epoch seconds): at least a second, a minute
// when the header is missing or broken, at most an hour (GitHub's window).
func UntilReset(h http.Header, now time.Time) time.Duration {
	reset, err := strconv.ParseInt(h.Get("X-Ratelimit-Reset"), 10, 64)
	if err != nil || reset < 0 || reset > 1<<40 {
		return time.Minute
	}
	return min(max(time.Unix(reset, 0).Sub(now), time.Second), time.Hour)
}

// Classify turns a non-2xx GitHub answer into an error: *RateLimitError when GitHub asks to
// wait, *ServerError for 5xx, a plain error otherwise. It returns nil for 2xx.
func Classify(status int, h http.Header, body []byte, now time.Time) error {
	switch {
	case status >= 200 && status < 300:
		return nil
	case status == http.StatusForbidden || status == http.StatusTooManyRequests:
		msg := ErrorMessage(body)
		if ra, ok := RetryAfter(h, now); ok {
			return &RateLimitError{RetryAfter: ra, Secondary: true, Message: msg}
		}
		if h.Get("X-Ratelimit-Remaining") == "0" {
			return &RateLimitError{RetryAfter: UntilReset(h, now), Message: msg}
		}
		if strings.Contains(strings.ToLower(msg), "secondary rate limit") || status == http.StatusTooManyRequests {
			// GitHub's advice without retry-after: wait at least a minute.
			return &RateLimitError{RetryAfter: time.Minute, Secondary: true, Message: msg}
		}
		return fmt.Errorf("github refused (%d): %s", status, msg)
	case status >= 500:
		return &ServerError{Status: status}
	default:
		return fmt.Errorf("github answered %d: %s", status, ErrorMessage(body))
	}
}

type envelope struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"errors"`
}

// GraphQL decodes one GraphQL HTTP response into its data. GitHub's primary rate limit comes
// back as HTTP 200 with a RATE_LIMITED error: that is a *RateLimitError until the reset.
func GraphQL(status int, h http.Header, body []byte, now time.Time) (json.RawMessage, error) {
	if err := Classify(status, h, body, now); err != nil {
		return nil, err
	}
	var r envelope
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("decode graphql response: %w", err)
	}
	if len(r.Errors) > 0 {
		ge := &GraphQLError{}
		for _, e := range r.Errors {
			if e.Type == "RATE_LIMITED" {
				return nil, &RateLimitError{RetryAfter: UntilReset(h, now), Message: e.Message}
			}
			ge.Messages = append(ge.Messages, e.Message)
			ge.Types = append(ge.Types, e.Type)
		}
		return nil, ge
	}
	return r.Data, nil
}

// ErrorMessage is the message of a REST error body, or the start of the body.
func ErrorMessage(body []byte) string {
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
