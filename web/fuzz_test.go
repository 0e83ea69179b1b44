package web

import (
	"net/url"
	"testing"
)

// The decisions page's query is outside input: whatever it holds, parsing either reports
// problems or yields a query the store accepts (a page size within bounds, at most one cursor).
func FuzzParseDecisionsQuery(f *testing.F) {
	for _, s := range []string{"", "actor=alice&verdict=reverted", "issue=acme/app%2312&since=2026-11-01&until=2026-11-02",
		"limit=0", "limit=-1", "limit=99999", "before=1.2&after=3.4", "page=-1", "since=yesterday", "issue=%23", "verdict=nope"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		_, aq, problems := parseDecisionsQuery(q)
		if len(problems) > 0 {
			return
		}
		if aq.Limit < 0 || aq.Limit > 500 {
			t.Fatalf("%q: page size %d", raw, aq.Limit)
		}
		if aq.Before != nil && aq.After != nil {
			t.Fatalf("%q: both cursors", raw)
		}
		if !aq.Since.IsZero() && !aq.Until.IsZero() && aq.Until.Before(aq.Since) {
			t.Logf("%q: until before since (an empty page)", raw)
		}
	})
}
