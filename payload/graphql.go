package payload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// GitHub's documented numbers for waiting and pacing. Every part of the app takes them from
// here; each names its source.
const (
	// SecondaryRateLimitWait is how long to wait after a secondary rate limit that carries
	// neither retry-after nor x-ratelimit-remaining 0: "If the retry-after response header is
	// present, you should not retry your request until after that many seconds has elapsed. If
	// the x-ratelimit-remaining header is 0, you should not retry your request until after the
	// time […] specified by the x-ratelimit-reset header. Otherwise, wait for at least one
	// minute before retrying." ("Exceeding the rate limit",
	// https://docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api
	// and https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api).
	// The same pages say a secondary limit is answered with "200 or 403" (GraphQL) or "403 or
	// 429" (REST), with an error message saying so.
	SecondaryRateLimitWait = time.Minute
	// MutationGap is the least pause between two mutative requests of one identity, made one at
	// a time: "To avoid exceeding a rate limit, you should pause at least 1 second between
	// mutative requests and avoid concurrent requests." ("Staying under the rate limit", the
	// GraphQL page above) and "make requests serially instead of concurrently" / "wait at least
	// one second between each request" ("Avoid concurrent requests", "Pause between mutative
	// requests",
	// https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api).
	MutationGap = time.Second
	// RateLimitWindow is the primary budget's window: points (GraphQL) or requests (REST) per
	// hour (the pages above).
	RateLimitWindow = time.Hour
)

// RateLimitError is GitHub asking the caller to wait: a secondary limit (HTTP 200 or 403 for
// GraphQL, 403 or 429 for REST, with retry-after or at least SecondaryRateLimitWait) or an
// exhausted primary budget (x-ratelimit-remaining 0, until x-ratelimit-reset; GraphQL answers
// it with HTTP 200 and a RATE_LIMITED error). RetryAfter is never shorter than GitHub asked.
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

// GraphQLError is the "errors" of a GraphQL response that retrying will not fix (bad document,
// not found, not accessible, …). GitHub answers a document with its data and its errors
// together: a field it could not resolve is null in the data and listed here with its path
// ("partial results"). Partial says data came back with the errors, in which case GraphQL
// returns that data too and the caller decides, error by error (Errors: path and type), what it
// can use.
type GraphQLError struct {
	Messages []string
	Types    []string
	Errors   []FieldError
	Partial  bool
}

func (e *GraphQLError) Error() string {
	var b strings.Builder
	b.WriteString("github graphql: ")
	for i, fe := range e.Errors {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(fe.String())
	}
	return b.String()
}

// FieldError is one entry of a GraphQL response's "errors": where (Path, from the root of the
// data: field names or aliases as strings, list indexes as ints; empty for an error of the whole
// document), what (Type: NOT_FOUND, FORBIDDEN, …; "" when GitHub gives none) and GitHub's
// Message.
type FieldError struct {
	Path    []any
	Type    string
	Message string
}

// PathString is Path joined with dots ("node.subIssues.nodes.3").
func (fe FieldError) PathString() string {
	parts := make([]string, len(fe.Path))
	for i, p := range fe.Path {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
}

// Under reports whether the error is at prefix or inside it.
func (fe FieldError) Under(prefix ...any) bool {
	if len(fe.Path) < len(prefix) {
		return false
	}
	for i, p := range prefix {
		if fe.Path[i] != p {
			return false
		}
	}
	return true
}

func (fe FieldError) String() string {
	s := fe.Message
	if fe.Type != "" {
		s = fe.Type + ": " + s
	}
	if len(fe.Path) > 0 {
		s += " (at " + fe.PathString() + ")"
	}
	return s
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
		return SecondaryRateLimitWait
	}
	return min(max(time.Unix(reset, 0).Sub(now), time.Second), RateLimitWindow)
}

// rateLimited is how long GitHub's documented order says to wait after a rate limit: its
// retry-after when present; the primary reset when x-ratelimit-remaining is 0; otherwise at
// least SecondaryRateLimitWait. primary says the answer names the primary budget (GraphQL's
// RATE_LIMITED type without a secondary message): then a missing x-ratelimit-remaining also
// means the reset, while a remaining budget means it was not the primary limit after all.
func rateLimited(h http.Header, now time.Time, msg string, primary bool) *RateLimitError {
	secondary := mentionsSecondary(msg)
	if ra, ok := RetryAfter(h, now); ok {
		return &RateLimitError{RetryAfter: ra, Secondary: true, Message: msg}
	}
	remaining := strings.TrimSpace(h.Get("X-Ratelimit-Remaining"))
	if remaining == "0" || (primary && !secondary && remaining == "") {
		return &RateLimitError{RetryAfter: UntilReset(h, now), Secondary: secondary, Message: msg}
	}
	return &RateLimitError{RetryAfter: SecondaryRateLimitWait, Secondary: true, Message: msg}
}

func mentionsSecondary(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "secondary rate limit")
}

// Classify turns a non-2xx GitHub answer into an error: *RateLimitError when GitHub asks to
// wait, *ServerError for 5xx, a plain error otherwise. It returns nil for 2xx.
func Classify(status int, h http.Header, body []byte, now time.Time) error {
	switch {
	case status >= 200 && status < 300:
		return nil
	case status == http.StatusForbidden || status == http.StatusTooManyRequests:
		msg := ErrorMessage(body)
		_, hasRetryAfter := RetryAfter(h, now)
		if hasRetryAfter || h.Get("X-Ratelimit-Remaining") == "0" || mentionsSecondary(msg) || status == http.StatusTooManyRequests {
			return rateLimited(h, now, msg, false)
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
		Type    string            `json:"type"`
		Message string            `json:"message"`
		Path    []json.RawMessage `json:"path"`
	} `json:"errors"`
}

// GraphQL decodes one GraphQL HTTP response. Without errors it returns the data. A rate limit
// is a *RateLimitError, whatever the status: GitHub answers an exceeded primary budget with HTTP
// 200 and a RATE_LIMITED error, and a secondary limit with 200 or 403 and an error message
// saying so (wait as rateLimited says). Any other "errors" are a *GraphQLError, returned with
// whatever data came back along with them (nil when none did): a field GitHub could not
// resolve is null there, and the error names its path.
func GraphQL(status int, h http.Header, body []byte, now time.Time) (json.RawMessage, error) {
	if err := Classify(status, h, body, now); err != nil {
		return nil, err
	}
	var r envelope
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("decode graphql response: %w", err)
	}
	data := r.Data
	if t := bytes.TrimSpace(data); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		data = nil
	}
	if len(r.Errors) == 0 {
		return data, nil
	}
	ge := &GraphQLError{Partial: data != nil}
	for _, e := range r.Errors {
		if e.Type == "RATE_LIMITED" || e.Type == "RATE_LIMIT" || mentionsSecondary(e.Message) {
			return nil, rateLimited(h, now, e.Message, !mentionsSecondary(e.Message))
		}
		ge.Messages = append(ge.Messages, e.Message)
		ge.Types = append(ge.Types, e.Type)
		ge.Errors = append(ge.Errors, FieldError{Path: decodePath(e.Path), Type: e.Type, Message: e.Message})
	}
	return data, ge
}

// decodePath reads an error's path: field names (strings) and list indexes (ints). Anything
// else is kept as its JSON text, which matches no prefix a caller looks for.
func decodePath(raw []json.RawMessage) []any {
	if len(raw) == 0 {
		return nil
	}
	out := make([]any, len(raw))
	for i, r := range raw {
		var s string
		var n int
		switch {
		case json.Unmarshal(r, &s) == nil:
			out[i] = s
		case json.Unmarshal(r, &n) == nil:
			out[i] = n
		default:
			out[i] = string(r)
		}
	}
	return out
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
