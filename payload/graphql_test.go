package payload

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"
)

// GitHub answers a document with its data and its errors together ("partial results"): a
// field it could not resolve is null and its error names the path. The data is kept and every
// error comes with its path and type, so a caller can use what came back.
func TestGraphQLPartialResults(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	// A family read where one sub-issue lives in a repository the installation cannot see.
	body := `{"data":{"node":{"id":"I_1","subIssues":{"nodes":[{"id":"I_2"},null]}}},
	  "errors":[{"type":"FORBIDDEN","path":["node","subIssues","nodes",1],"extensions":{"saml_failure":false},
	    "locations":[{"line":4,"column":5}],"message":"Resource not accessible by integration"}]}`
	data, err := GraphQL(200, http.Header{}, []byte(body), now)
	var ge *GraphQLError
	if !errors.As(err, &ge) || !ge.Partial || len(ge.Errors) != 1 {
		t.Fatalf("err %v (%#v)", err, ge)
	}
	fe := ge.Errors[0]
	if fe.Type != "FORBIDDEN" || fe.PathString() != "node.subIssues.nodes.1" || !fe.Under("node", "subIssues", "nodes", 1) || fe.Under("node", "parent") {
		t.Fatalf("field error %+v", fe)
	}
	var d struct {
		Node struct {
			SubIssues struct {
				Nodes []*struct{ ID string } `json:"nodes"`
			} `json:"subIssues"`
		} `json:"node"`
	}
	if err := json.Unmarshal(data, &d); err != nil || len(d.Node.SubIssues.Nodes) != 2 || d.Node.SubIssues.Nodes[0].ID != "I_2" || d.Node.SubIssues.Nodes[1] != nil {
		t.Fatalf("data %s: %+v %v", data, d, err)
	}

	// A node deleted between two reads: data.node is null and NOT_FOUND names the path.
	data, err = GraphQL(200, http.Header{}, []byte(`{"data":{"node":null},"errors":[{"type":"NOT_FOUND","path":["node"],"message":"Could not resolve to a node with the global id of 'PVTI_1'"}]}`), now)
	if !errors.As(err, &ge) || !ge.Partial || ge.Errors[0].PathString() != "node" || ge.Types[0] != "NOT_FOUND" || string(data) != `{"node":null}` {
		t.Fatalf("%s %v", data, err)
	}

	// One alias of a batch failed: the others' data is there.
	data, err = GraphQL(200, http.Header{}, []byte(`{"data":{"m0":{"projectV2Item":{"id":"PVTI_0"}},"m1":null},"errors":[{"type":"NOT_FOUND","path":["m1"],"message":"Could not resolve to ProjectV2Item"}]}`), now)
	if !errors.As(err, &ge) || !ge.Partial || !ge.Errors[0].Under("m1") || len(data) == 0 {
		t.Fatalf("%s %v", data, err)
	}

	// No data at all: not partial.
	if data, err = GraphQL(200, http.Header{}, []byte(`{"data":null,"errors":[{"message":"Parse error"}]}`), now); !errors.As(err, &ge) || ge.Partial || data != nil {
		t.Fatalf("%s %v", data, err)
	}
}

// "If you exceed a secondary rate limit, the response status will be 200 or 403, and you will
// receive an error message that indicates that you hit a secondary rate limit. If the
// retry-after response header is present, [wait] that many seconds […]. If the
// x-ratelimit-remaining header is 0, [wait until] x-ratelimit-reset. Otherwise, wait for at
// least one minute." — GraphQL rate limits, "Exceeding the rate limit".
func TestGraphQLSecondaryRateLimitShapes(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		// The primary budget is far from spent, and resets in 50 minutes.
		h.Set("X-Ratelimit-Limit", "5000")
		h.Set("X-Ratelimit-Remaining", "4990")
		h.Set("X-Ratelimit-Reset", "1700003000")
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	secondary := `{"errors":[{"type":"RATE_LIMITED","message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}]}`
	cases := []struct {
		name   string
		status int
		h      http.Header
		body   string
		want   time.Duration
	}{
		{"200 with retry-after", 200, hdr("Retry-After", "7"), secondary, 7 * time.Second},
		{"200 without retry-after", 200, hdr(), secondary, SecondaryRateLimitWait},
		{"200, message only", 200, hdr(), `{"errors":[{"message":"You have exceeded a secondary rate limit."}]}`, SecondaryRateLimitWait},
		{"200, RATE_LIMIT type, budget left", 200, hdr(), `{"errors":[{"type":"RATE_LIMIT","code":"graphql_rate_limit","message":"API rate limit already exceeded for installation ID 1."}]}`, SecondaryRateLimitWait},
		{"200, secondary, remaining 0", 200, hdr("X-Ratelimit-Remaining", "0"), secondary, 3000 * time.Second},
		{"403 with retry-after", 403, hdr("Retry-After", "3"), `{"message":"You have exceeded a secondary rate limit."}`, 3 * time.Second},
		{"403 without retry-after", 403, hdr(), `{"message":"You have exceeded a secondary rate limit."}`, SecondaryRateLimitWait},
		{"primary spent (200, remaining 0)", 200, hdr("X-Ratelimit-Remaining", "0"), `{"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded for installation ID 1."}]}`, 3000 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := GraphQL(c.status, c.h, []byte(c.body), now)
			var rl *RateLimitError
			if !errors.As(err, &rl) || rl.RetryAfter != c.want {
				t.Fatalf("%v, want a wait of %s", err, c.want)
			}
		})
	}
	// A 403 that is not a rate limit stays a refusal.
	if _, err := GraphQL(403, hdr(), []byte(`{"message":"Resource not accessible by integration"}`), now); err == nil || errors.As(err, new(*RateLimitError)) {
		t.Fatalf("plain 403: %v", err)
	}
}
