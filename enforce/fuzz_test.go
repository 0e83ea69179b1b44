package enforce

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseViolations reads a violation comment's body as GitHub returns it (edited by anyone
// with write access): parsing never fails, and whatever it recovers renders back into a body
// that parses to the same violations (so coalescing never loses or invents one).
func FuzzParseViolations(f *testing.F) {
	o := Observation{DeliveryID: "d1", LegalFrom: "Backlog", To: "In Progress", Actor: "agent-1", ActorKind: "agent",
		At: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), Reason: "not allowed", Recovery: "hand off"}
	one := renderViolations([]violation{{marker: violationMarker(o), line: violationLine(o, "Backlog")}}, 1)
	f.Add(one)
	f.Add(strings.Replace(one, "- ", "", 1))
	f.Add(one + "\n- an extra line by hand\n")
	f.Add("<!-- ralph-transition: {\"from\":\"-->\"} -->\n- x")
	f.Add("")
	f.Fuzz(func(t *testing.T, body string) {
		vs := parseViolations(body)
		if vs == nil {
			return
		}
		again := parseViolations(renderViolations(vs, len(vs)))
		if len(again) != len(vs) {
			t.Fatalf("%d violations parsed, %d after rendering them again", len(vs), len(again))
		}
		for i := range vs {
			if again[i].marker.String() != vs[i].marker.String() {
				t.Fatalf("violation %d: marker %s became %s", i, vs[i].marker, again[i].marker)
			}
		}
	})
}
