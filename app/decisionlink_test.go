package app

import (
	"testing"

	"github.com/ralph-gate/ralph-gate/app/config"
)

// Violation comments link to the decision pages only where people can open them: the pages
// enabled and a public address set.
func TestDecisionLink(t *testing.T) {
	var cfg config.Config
	if decisionLink(cfg) != nil {
		t.Fatal("a link without the pages")
	}
	cfg.UI.Enabled = true
	if decisionLink(cfg) != nil {
		t.Fatal("a link without server.public_url")
	}
	cfg.Server.PublicURL = "https://gate.example/"
	if got := decisionLink(cfg)("a b/c"); got != "https://gate.example/ui/decisions/by-delivery/a%20b%2Fc" {
		t.Fatalf("link %q", got)
	}
}
