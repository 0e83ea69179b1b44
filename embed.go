// Package ralphgate holds what the whole module shares at its root: the default
// configuration, embedded so the binary works without any file.
package ralphgate

import _ "embed"

//go:embed config.yml
var defaultConfig []byte

// DefaultConfig returns the embedded config.yml (a copy: callers may not change the original).
func DefaultConfig() []byte {
	return append([]byte(nil), defaultConfig...)
}
