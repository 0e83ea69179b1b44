package web

import (
	"encoding/xml"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
)

// Names from outside that must show inert: bidi overrides, isolates, control characters and
// markup. hostileAgentShown and hostileToolShown are them as the page's text reads.
const (
	hostileAgent      = "agent-\u202eevil\u2066 <script>alert(1)</script>\x1b[31m\x00"
	hostileAgentShown = "agent-evil <script>alert(1)</script>[31m"
	hostileTool       = "tool\u202e\x07<b>x</b>"
	hostileToolShown  = "tool<b>x</b>"
)

// facadeCounts are the façade's counts of the last hour, and those older than an hour but
// within the day. Bucket 1 is ≤ 10 ms, 2 ≤ 25 ms, 0 ≤ 5 ms, 4 ≤ 100 ms, 13 past a minute.
func facadeCounts() (hour, older []enforce.ToolCallCount) {
	past := len(enforce.DurationBounds())
	hour = []enforce.ToolCallCount{
		{Tool: "handoff_ticket", Agent: "agent-1", Outcome: enforce.OutcomeOK, Bucket: 1, Calls: 4, Requests: 8},
		{Tool: "handoff_ticket", Agent: "agent-1", Outcome: enforce.OutcomeRefused, Rule: "transition", Bucket: 2, Calls: 3, Requests: 3},
		{Tool: "handoff_ticket", Agent: "agent-1", Outcome: enforce.OutcomeRefused, Rule: "arguments", Bucket: 2, Calls: 1},
		{Tool: hostileTool, Agent: hostileAgent, Outcome: enforce.OutcomeError, Bucket: past, Calls: 2, Requests: 1},
		{Tool: "claim_ticket", Agent: "agent-2", Outcome: enforce.OutcomeRateLimited, Rule: "rate", Bucket: 0, Calls: 1},
	}
	older = []enforce.ToolCallCount{
		{Tool: "list_tickets", Agent: "agent-3", Outcome: enforce.OutcomeOK, Bucket: 4, Calls: 5, Requests: 5},
		{Tool: "handoff_ticket", Agent: "agent-1", Outcome: enforce.OutcomeRefused, Rule: "transition", Bucket: 2, Calls: 2},
	}
	return hour, older
}

// facadeReport is boardReport with the façade's use, summed as the health reader sums it.
func facadeReport() health.Report {
	rep := boardReport()
	hour, older := facadeCounts()
	rep.Facade = health.Facade{
		Hour: health.Window(t0.Add(-time.Hour), hour),
		Day:  health.Window(t0.Add(-24*time.Hour), append(append([]enforce.ToolCallCount{}, hour...), older...)),
	}
	return rep
}

// pageWindow is one window of the page's façade section as a reader sees it: its heading and
// its tables.
type pageWindow struct {
	Heading string
	Tables  []pageTable
}

type pageTable struct {
	Head []string
	Rows [][]string
}

// facadeSection reads the board page's façade section, which must be well-formed markup
// (every element closed, every entity known). It also checks that each cell's data-label,
// which the narrow layout shows in front of the cell, is its column's heading.
func facadeSection(t *testing.T, body string) []pageWindow {
	t.Helper()
	i := strings.Index(body, "<h2>Façade</h2>")
	if i < 0 {
		t.Fatalf("the page has no façade section:\n%s", body)
	}
	j := strings.Index(body[i:], "</section>")
	if j < 0 {
		t.Fatalf("the façade section is not closed")
	}
	section := "<section>" + body[i:i+j] + "</section>"
	dec := xml.NewDecoder(strings.NewReader(section))
	dec.Entity = xml.HTMLEntity
	var (
		out           []pageWindow
		text          *strings.Builder
		inHead, inRow bool
		row           []string
		label         string
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the façade section is not well-formed: %v\n%s", err, section)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			switch tok.Name.Local {
			case "h3":
				out = append(out, pageWindow{})
				text = &strings.Builder{}
			case "table":
				if len(out) == 0 {
					t.Fatalf("a façade table comes before any window's heading")
				}
				w := &out[len(out)-1]
				w.Tables = append(w.Tables, pageTable{})
			case "thead":
				inHead = true
			case "tr":
				inRow, row = true, nil
			case "th", "td":
				if !inRow {
					t.Fatalf("a cell outside a row")
				}
				text, label = &strings.Builder{}, ""
				for _, a := range tok.Attr {
					if a.Name.Local == "data-label" {
						label = a.Value
					}
				}
				if tok.Name.Local == "td" && label == "" {
					t.Errorf("a cell has no data-label")
				}
			}
		case xml.CharData:
			if text != nil {
				text.Write(tok)
			}
		case xml.EndElement:
			switch tok.Name.Local {
			case "h3":
				out[len(out)-1].Heading = text.String()
				text = nil
			case "thead":
				inHead = false
			case "th", "td":
				cell := text.String()
				text = nil
				if tok.Name.Local == "td" {
					tb := out[len(out)-1].Tables
					head := tb[len(tb)-1].Head
					if col := len(row); col >= len(head) || head[col] != label {
						t.Errorf("cell %d (%q) has data-label %q, its column is headed %v", col, cell, label, head)
					}
				}
				row = append(row, cell)
			case "tr":
				inRow = false
				w := &out[len(out)-1]
				tb := &w.Tables[len(w.Tables)-1]
				if inHead {
					tb.Head = row
				} else {
					tb.Rows = append(tb.Rows, row)
				}
			}
		}
	}
	return out
}

var usageHead = func(by string) []string {
	return []string{by, "Calls", "OK", "Refused", "Errors", "Rate limited", "GitHub requests", "p50", "p99", "Refused by rule"}
}

// The board page shows what agents did through the façade over the last hour and the last
// day: per tool and per agent, the calls, their outcomes, the GitHub requests they made, their
// p50 and p99 and the refusals by rule, most first.
func TestBoardFacade(t *testing.T) {
	t.Parallel()
	e := newEnv(t, facadeReport(), Options{})
	res := e.get(t, "/ui/projects/acme/1")
	if res.status != 200 {
		t.Fatalf("status %d\n%s", res.status, res.body)
	}
	got := facadeSection(t, res.body)
	want := []pageWindow{
		{Heading: "Last hour: 11 tool calls", Tables: []pageTable{
			{Head: usageHead("Tool"), Rows: [][]string{
				{"handoff_ticket", "8", "4", "4", "0", "0", "11", "≤ 10 ms", "≤ 25 ms", "transition 3, arguments 1"},
				{hostileToolShown, "2", "0", "0", "2", "0", "1", "> 1 min", "> 1 min", ""},
				{"claim_ticket", "1", "0", "0", "0", "1", "0", "≤ 5 ms", "≤ 5 ms", "rate 1"},
			}},
			{Head: usageHead("Agent"), Rows: [][]string{
				{"agent-1", "8", "4", "4", "0", "0", "11", "≤ 10 ms", "≤ 25 ms", "transition 3, arguments 1"},
				{hostileAgentShown, "2", "0", "0", "2", "0", "1", "> 1 min", "> 1 min", ""},
				{"agent-2", "1", "0", "0", "0", "1", "0", "≤ 5 ms", "≤ 5 ms", "rate 1"},
			}},
		}},
		{Heading: "Last day: 18 tool calls", Tables: []pageTable{
			{Head: usageHead("Tool"), Rows: [][]string{
				{"handoff_ticket", "10", "4", "6", "0", "0", "11", "≤ 25 ms", "≤ 25 ms", "transition 5, arguments 1"},
				{"list_tickets", "5", "5", "0", "0", "0", "5", "≤ 100 ms", "≤ 100 ms", ""},
				{hostileToolShown, "2", "0", "0", "2", "0", "1", "> 1 min", "> 1 min", ""},
				{"claim_ticket", "1", "0", "0", "0", "1", "0", "≤ 5 ms", "≤ 5 ms", "rate 1"},
			}},
			{Head: usageHead("Agent"), Rows: [][]string{
				{"agent-1", "10", "4", "6", "0", "0", "11", "≤ 25 ms", "≤ 25 ms", "transition 5, arguments 1"},
				{"agent-3", "5", "5", "0", "0", "0", "5", "≤ 100 ms", "≤ 100 ms", ""},
				{hostileAgentShown, "2", "0", "0", "2", "0", "1", "> 1 min", "> 1 min", ""},
				{"agent-2", "1", "0", "0", "0", "1", "0", "≤ 5 ms", "≤ 5 ms", "rate 1"},
			}},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the façade section reads\n%q\nwant\n%q", got, want)
	}
	// The hostile names are escaped, and shown without their invisible characters.
	for _, w := range []string{
		`<td data-label="Agent">agent-evil &lt;script&gt;alert(1)&lt;/script&gt;[31m</td>`,
		`<td data-label="Tool">tool&lt;b&gt;x&lt;/b&gt;</td>`,
	} {
		if !strings.Contains(res.body, w) {
			t.Errorf("the page lacks %q", w)
		}
	}
	for _, w := range []string{"<script", "<b>x", "\u202e", "\u2066", "\x1b", "\x00", "\x07"} {
		if strings.Contains(res.body, w) {
			t.Errorf("the page contains %q", w)
		}
	}
}

// A window with no call says so and shows no table; one call is "1 tool call".
func TestBoardFacadeQuiet(t *testing.T) {
	t.Parallel()
	one := []enforce.ToolCallCount{{Tool: "list_tickets", Agent: "agent-3", Outcome: enforce.OutcomeOK, Bucket: 0, Calls: 1}}
	quietHour := boardReport()
	quietHour.Facade = health.Facade{Hour: health.Window(t0.Add(-time.Hour), nil), Day: health.Window(t0.Add(-24*time.Hour), one)}
	tests := []struct {
		name string
		rep  health.Report
		want []pageWindow
	}{
		{"a quiet hour in a busy day", quietHour, []pageWindow{
			{Heading: "Last hour: 0 tool calls"},
			{Heading: "Last day: 1 tool call", Tables: []pageTable{
				{Head: usageHead("Tool"), Rows: [][]string{{"list_tickets", "1", "1", "0", "0", "0", "0", "≤ 5 ms", "≤ 5 ms", ""}}},
				{Head: usageHead("Agent"), Rows: [][]string{{"agent-3", "1", "1", "0", "0", "0", "0", "≤ 5 ms", "≤ 5 ms", ""}}},
			}},
		}},
		// A report without its façade part (nil lists, as a report from before it decodes).
		{"no call at all", boardReport(), []pageWindow{{Heading: "Last hour: 0 tool calls"}, {Heading: "Last day: 0 tool calls"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.rep, Options{})
			res := e.get(t, "/ui/projects/acme/1")
			if res.status != 200 {
				t.Fatalf("status %d\n%s", res.status, res.body)
			}
			if got := facadeSection(t, res.body); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("the façade section reads\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
