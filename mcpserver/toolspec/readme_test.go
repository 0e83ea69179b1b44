package toolspec

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the tool list in README.md")

// TestReadmeToolList keeps the README's tool list generated from the code.
func TestReadmeToolList(t *testing.T) {
	file := filepath.Join("..", "..", "README.md")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	const open, end = "<!-- mcp-tools:start", "<!-- mcp-tools:end -->"
	readme := string(data)
	i := strings.Index(readme, open)
	j := strings.Index(readme, end)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the %s … %s markers", open, end)
	}
	k := i + strings.Index(readme[i:], "-->\n") + len("-->\n")
	want := Markdown()
	if got := readme[k:j]; got != want {
		if !*update {
			t.Fatalf("README.md's tool list is out of date: run go test ./mcpserver/toolspec -run TestReadmeToolList -update\nwant:\n%s", want)
		}
		if err := os.WriteFile(file, []byte(readme[:k]+want+readme[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
