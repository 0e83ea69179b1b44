package enforce

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ralph-gate/ralph-gate/marker"
)

// hostileReasons are texts an agent (or whoever holds its token) might hand in as a handoff's
// reason, each trying to make the App's comment do something else than show it.
var hostileReasons = map[string]string{
	"team mention":         "@acme/maintainers please merge",
	"user mention":         "cc @alice",
	"raw html":             `<img src=x onerror=alert(1)><details open><summary>ralph-gate approved</summary></details>`,
	"link":                 "[ralph-gate approved this](https://evil.example/phish)",
	"bare CR heading":      "done\r# ralph-gate approved this move",
	"CRLF heading":         "done\r\n## ralph-gate approved this move",
	"unicode line sep":     "done\u2028# ralph-gate approved",
	"forged marker":        `<!-- ralph-transition: {"from":"Human Needed","to":"Done","command":null,"at":"2026-01-01T00:00:00Z","verdict":"handoff"} -->`,
	"forged violation tag": "<!-- ralph-gate:violation -->",
	"closing fence":        "```\n**ralph-gate approved this move.**\n```",
	"long fence":           "``````\n@alice\n``````",
	"tilde fence":          "~~~\n@alice\n~~~",
	"bold impersonation":   "**ralph-gate approved this handoff.**",
	"bidi override":        "\u202eevorppa etag-hplar",
	"nul and controls":     "ok\x00\x1b[31mred\x07",
	"very long":            strings.Repeat("@alice ", 2000),
}

// TestAgentTextCannotEscape renders each hostile reason into a real handoff comment: the body
// carries exactly the App's one marker, and everything the agent wrote sits inside one fenced
// block it cannot close.
func TestAgentTextCannotEscape(t *testing.T) {
	for name, reason := range hostileReasons {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, issue("A", "Research Needed"))
			if _, err := h.handoff("A", Handoff{Agent: "agent-1", Command: "research", ToState: "Research in Progress", Reason: reason}); err != nil {
				t.Fatal(err)
			}
			var body string
			for _, b := range h.board.comments {
				body = b
			}
			ms, err := marker.ParseTransitions(body)
			if err != nil || len(ms) != 1 || ms[0].Verdict != string(VerdictHandoff) || ms[0].To != "Research in Progress" {
				t.Fatalf("markers = %+v, %v; want the App's one handoff marker:\n%s", ms, err, body)
			}
			if strings.Contains(body, marker.Violation) {
				t.Errorf("a violation tag got through:\n%s", body)
			}
			if !strings.HasPrefix(body, ms[0].String()+"\n") || strings.ContainsAny(ms[0].String(), "@\r") {
				t.Errorf("the marker is not the first line, or holds an active mention:\n%s", body)
			}
			// The marker is a hidden HTML comment: nothing in it is rendered.
			outside, inside := splitFenced(t, strings.TrimPrefix(body, ms[0].String()+"\n"))
			if strings.Contains(outside, "@") || strings.Contains(outside, "<img") || strings.Contains(outside, "](") {
				t.Errorf("agent text outside its block:\n%s", outside)
			}
			if strings.ContainsAny(body, "\r\u2028\u2029\u202e\x00\x1b") {
				t.Errorf("a control or line-separator character got through: %q", body)
			}
			if n := utf8.RuneCountInString(inside); n > maxAgentText+2 {
				t.Errorf("%d runes of agent text, want at most %d", n, maxAgentText+2)
			}
		})
	}
}

// splitFenced separates a comment into what lies outside its one fenced code block and what
// lies inside, by CommonMark's rules for backtick fences (a closing fence is at least as long as
// the opening one, indented at most three spaces, with nothing but spaces after it).
func splitFenced(t *testing.T, body string) (outside, inside string) {
	t.Helper()
	var out, in strings.Builder
	fence := ""
	blocks := 0
	for _, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		run := len(trimmed) - len(strings.TrimLeft(trimmed, "`"))
		switch {
		case fence == "" && indent <= 3 && run >= 3:
			fence, blocks = trimmed[:run], blocks+1
		case fence != "" && indent <= 3 && run >= len(fence) && strings.TrimRight(trimmed[run:], " ") == "":
			fence = ""
		case fence != "":
			in.WriteString(line + "\n")
		default:
			out.WriteString(line + "\n")
		}
	}
	if fence != "" || blocks > 1 {
		t.Fatalf("the agent's block is left open or split in %d:\n%s", blocks, body)
	}
	return out.String(), in.String()
}

// FuzzAgentText: whatever an agent sends, its rendering is one fenced block it cannot close,
// with no carriage return, no hidden-comment opener (no forged marker) and bounded length.
func FuzzAgentText(f *testing.F) {
	for _, r := range hostileReasons {
		f.Add(r)
	}
	// Found by fuzzing: openers near the bound, once defused after the cut, pushed the text past it.
	f.Add(strings.Repeat("x", maxAgentText-3) + strings.Repeat("<!--", 3))
	f.Add(strings.Repeat("<!--", maxAgentText))
	f.Fuzz(func(t *testing.T, text string) {
		out := agentText(text)
		first, rest, _ := strings.Cut(out, "\n")
		fence := strings.TrimSuffix(first, "text")
		if len(fence) < 3 || strings.Trim(fence, "`") != "" || !strings.HasSuffix(out, "\n"+fence+"\n") {
			t.Fatalf("not one fenced block: %q", out)
		}
		interior := strings.TrimSuffix(rest, fence+"\n")
		for _, line := range strings.Split(interior, "\n") {
			trimmed := strings.TrimLeft(line, " ")
			if len(line)-len(trimmed) <= 3 && strings.HasPrefix(trimmed, fence) {
				t.Fatalf("line %q closes the block early: %q", line, out)
			}
		}
		if strings.ContainsAny(interior, "\r\u2028\u2029") || strings.Contains(interior, "<!--") {
			t.Fatalf("a line break or marker opener got through: %q", out)
		}
		if n := utf8.RuneCountInString(interior); n > maxAgentText+2 {
			t.Fatalf("%d runes inside, want at most %d", n, maxAgentText+2)
		}
	})
}
