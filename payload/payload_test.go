package payload

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func seedPayloads(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{`{}`, `null`, `[]`, `{"action":"edited","projects_v2_item":{"node_id":"PVTI_1"},"changes":{"field_value":{"from":null}}}`,
		`{"action":"edited","projects_v2_item":{"node_id":"PVTI_1"},"changes":{"field_value":{"from":{"name":7}}}}`,
		`{"action":"closed","issue":{"number":1},"repository":{"name":"app","owner":{"login":"acme"}}}`,
		`{"action":"closed","number":3,"pull_request":{"merged":true},"repository":{"name":"app"}}`} {
		f.Add([]byte(s))
	}
}

func TestProjectsV2Item(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "projects_v2_item_edited.json"))
	if err != nil {
		t.Fatal(err)
	}
	fc, err := ProjectsV2Item(data)
	if err != nil {
		t.Fatal(err)
	}
	if fc.Ignore != "" || fc.ItemID == "" || fc.Field == "" || !fc.FromKnown || fc.To == "" || fc.Sender == "" {
		t.Fatalf("decoded %+v", fc)
	}
	for _, bad := range []string{`{`, `{"projects_v2_item":{}}`, `{"action":"edited","projects_v2_item":{"node_id":"x"},"changes":{"field_value":{"to":"oops"}}}`} {
		if _, err := ProjectsV2Item([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", bad, err)
		}
	}
	fc, err = ProjectsV2Item([]byte(`{"action":"edited","projects_v2_item":{"node_id":"x"},"changes":{"field_value":{"from":null}}}`))
	if err != nil || !fc.FromKnown || fc.From != "" {
		t.Fatalf("from null: %+v %v", fc, err)
	}
	fc, err = ProjectsV2Item([]byte(`{"action":"edited","projects_v2_item":{"node_id":"x"},"changes":{"field_value":{}}}`))
	if err != nil || fc.FromKnown {
		t.Fatalf("from absent: %+v %v", fc, err)
	}
}

// Every byte of a projects_v2_item payload is GitHub's (or an attacker's who has the secret):
// decoding never panics, and a change it accepts names its item.
func FuzzProjectsV2Item(f *testing.F) {
	seedPayloads(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fc, err := ProjectsV2Item(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if fc.ItemID == "" {
			t.Fatal("accepted a payload without an item")
		}
	})
}

func FuzzIssues(f *testing.F) {
	seedPayloads(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Issues(data)
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
		_ = ev
	})
}

func FuzzPullRequest(f *testing.F) {
	seedPayloads(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := PullRequest(data); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
	})
}

func TestGraphQL(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	cases := []struct {
		name   string
		status int
		header http.Header
		body   string
		check  func(t *testing.T, data []byte, err error)
	}{
		{"data", 200, nil, `{"data":{"a":1}}`, func(t *testing.T, data []byte, err error) {
			if err != nil || string(data) != `{"a":1}` {
				t.Fatalf("%s %v", data, err)
			}
		}},
		{"secondary with retry-after", 403, h("Retry-After", "7"), `{"message":"You have exceeded a secondary rate limit."}`, func(t *testing.T, _ []byte, err error) {
			var rl *RateLimitError
			if !errors.As(err, &rl) || !rl.Secondary || rl.RetryAfter != 7*time.Second {
				t.Fatalf("%v", err)
			}
		}},
		{"retry-after as a date", 429, h("Retry-After", now.Add(90*time.Second).UTC().Format(http.TimeFormat)), `{}`, func(t *testing.T, _ []byte, err error) {
			var rl *RateLimitError
			if !errors.As(err, &rl) || rl.RetryAfter != 90*time.Second {
				t.Fatalf("%v", err)
			}
		}},
		{"primary spent (REST style)", 403, h("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "1700000120"), `{"message":"API rate limit exceeded"}`, func(t *testing.T, _ []byte, err error) {
			var rl *RateLimitError
			if !errors.As(err, &rl) || rl.Secondary || rl.RetryAfter != 2*time.Minute {
				t.Fatalf("%v", err)
			}
		}},
		{"primary spent (GraphQL 200)", 200, h("X-Ratelimit-Reset", "1700000030"), `{"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded"}]}`, func(t *testing.T, _ []byte, err error) {
			var rl *RateLimitError
			if !errors.As(err, &rl) || rl.RetryAfter != 30*time.Second {
				t.Fatalf("%v", err)
			}
		}},
		{"5xx", 502, nil, `{"message":"Server Error"}`, func(t *testing.T, _ []byte, err error) {
			var se *ServerError
			if !errors.As(err, &se) || se.Status != 502 {
				t.Fatalf("%v", err)
			}
		}},
		{"graphql error", 200, nil, `{"errors":[{"type":"NOT_FOUND","message":"Could not resolve"}]}`, func(t *testing.T, _ []byte, err error) {
			var ge *GraphQLError
			if !errors.As(err, &ge) || !strings.Contains(err.Error(), "Could not resolve") {
				t.Fatalf("%v", err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := c.header
			if hdr == nil {
				hdr = http.Header{}
			}
			data, err := GraphQL(c.status, hdr, []byte(c.body), now)
			c.check(t, data, err)
		})
	}
}

// GraphQL responses and their rate-limit headers are decoded without panics, and a rate limit
// never asks for a negative or absurd wait.
func FuzzGraphQL(f *testing.F) {
	f.Add(200, "", "", `{"data":{"organization":{"projectV2":{"items":{"nodes":[]}}}}}`)
	f.Add(403, "60", "", `{"message":"secondary rate limit"}`)
	f.Add(200, "", "1700000030", `{"errors":[{"type":"RATE_LIMITED","message":"x"}]}`)
	f.Add(429, "Wed, 21 Oct 2015 07:28:00 GMT", "", `{}`)
	f.Add(502, "", "", `<html>`)
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, status int, retryAfter, reset, body string) {
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		h.Set("X-Ratelimit-Reset", reset)
		h.Set("X-Ratelimit-Remaining", "0")
		_, err := GraphQL(status, h, []byte(body), now)
		var rl *RateLimitError
		if errors.As(err, &rl) && (rl.RetryAfter < 0 || rl.RetryAfter > 24*time.Hour) {
			t.Fatalf("wait %s from retry-after %q reset %q", rl.RetryAfter, retryAfter, reset)
		}
		RateFromHeaders(h)
	})
}
