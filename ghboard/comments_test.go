package ghboard

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A comment's database id is read from fullDatabaseId, a BigInt GitHub sends as a string:
// every digit is kept, past 2^31 and past what a float64 holds exactly (2^53).
func TestBigIntDecodes(t *testing.T) {
	for in, want := range map[string]int64{
		`"2250077004"`:          2_250_077_004,
		`"9007199254740993"`:    9_007_199_254_740_993, // 2^53 + 1
		`"9223372036854775807"`: 9_223_372_036_854_775_807,
		`2310943199`:            2_310_943_199, // a number is taken too
		`null`:                  0,
	} {
		var n bigInt
		if err := json.Unmarshal([]byte(in), &n); err != nil || int64(n) != want {
			t.Errorf("%s: %d %v, want %d", in, n, err, want)
		}
	}
	for _, in := range []string{`"12a"`, `""`, `"9223372036854775808"`, `1.5`, `true`} {
		var n bigInt
		if err := json.Unmarshal([]byte(in), &n); err == nil {
			t.Errorf("%s: decoded as %d, want an error", in, n)
		}
	}
}

// AddComment and FindComment select fullDatabaseId (never databaseId, an Int) and keep every
// digit of it.
func TestCommentDatabaseIDsPastInt32(t *testing.T) {
	const id = "9007199254740993" // 2^53 + 1: a float64 would round it
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Query string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		queries = append(queries, req.Query)
		if strings.Contains(req.Query, "addComment") {
			w.Write([]byte(`{"data":{"addComment":{"commentEdge":{"node":{"id":"IC_1","fullDatabaseId":"` + id + `"}}}}}`))
			return
		}
		w.Write([]byte(`{"data":{"node":{"__typename":"Issue","comments":{"nodes":[
			{"id":"IC_0","fullDatabaseId":"2250077004","body":"someone else's marker","viewerDidAuthor":false},
			{"id":"IC_1","fullDatabaseId":"` + id + `","body":"<!-- marker -->","viewerDidAuthor":true}]}}}}`))
	}))
	defer srv.Close()
	b := New(NewClient(srv.Client(), srv.URL), "Workflow State", NewFieldCache())
	ctx := context.Background()

	c, err := b.AddComment(ctx, "I_x", "hi")
	if err != nil || c.ID != "IC_1" || c.DatabaseID != 9_007_199_254_740_993 {
		t.Fatalf("AddComment: %+v %v", c, err)
	}
	c, found, err := b.FindComment(ctx, "I_x", "marker")
	if err != nil || !found || c.ID != "IC_1" || c.DatabaseID != 9_007_199_254_740_993 {
		t.Fatalf("FindComment: %+v %v %v", c, found, err)
	}
	for _, q := range queries {
		if strings.Contains(q, " databaseId") || !strings.Contains(q, "fullDatabaseId") {
			t.Errorf("document selects databaseId (an Int) rather than fullDatabaseId:\n%s", q)
		}
	}
}
