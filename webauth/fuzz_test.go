package webauth

import (
	"testing"
)

// A cookie value is outside input: whatever a browser sends, unseal either refuses it or
// returns what seal wrote with the same key — never a value signed by another key.
func FuzzUnseal(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	good, err := seal(key, session{Login: "alice", UserID: 1, ID: "s1", Expires: 1})
	if err != nil {
		f.Fatal(err)
	}
	other, _ := seal([]byte("another key, also thirty-two bytes"), session{Login: "mallory"})
	for _, s := range []string{good, other, "", ".", "x.y", good + "x", "e30." + good[len(good)-43:]} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		var s session
		if err := unseal(key, value, &s); err != nil {
			return
		}
		again, err := seal(key, s)
		if err != nil {
			t.Fatal(err)
		}
		var back session
		if err := unseal(key, again, &back); err != nil || back != s {
			t.Fatalf("a value unsealed as %+v does not round-trip: %v", s, err)
		}
		if value == other {
			t.Fatal("a value signed by another key was accepted")
		}
	})
}
