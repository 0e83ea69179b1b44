package health_test

import (
	"strconv"
	"testing"

	"github.com/ralph-gate/ralph-gate/health"
)

// A project named on the command line or by an agent is outside input: ParseProject either
// refuses it or names an owner and a positive number that print back to an equivalent name.
func FuzzParseProject(f *testing.F) {
	for _, s := range []string{"acme/1", " acme/12 ", "acme/0", "acme/-1", "/1", "acme/", "a/b/c", "acme/1x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := health.ParseProject(s)
		if err != nil {
			return
		}
		if p.Owner == "" || p.Number <= 0 {
			t.Fatalf("%q parsed as %+v", s, p)
		}
		again, err := health.ParseProject(p.Owner + "/" + strconv.Itoa(p.Number))
		if err != nil || again != p {
			t.Fatalf("%q: %+v does not print back (%+v, %v)", s, p, again, err)
		}
	})
}
