package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/internal/spend"
	"github.com/ralph-gate/ralph-gate/policy"
)

// Every tool call is observed (docs/OPERATIONS.md "The façade"): when it ends it is counted by
// tool, agent, outcome and rule, with its duration and the GitHub requests made while it ran,
// and logged in one line. Labels come from bounded sets: a tool the façade does not have and
// an agent the configuration does not name are both counted as "other".

// CallObserver is told of tool calls (the app counts them in its metrics and its store).
type CallObserver interface {
	// CallEnded is told of each tool call when it ends.
	CallEnded(ctx context.Context, c enforce.ToolCall)
	// RequestMade is told of each GitHub request a call of tool makes, as it is made.
	RequestMade(tool string)
}

// Label values for what is not one of the bounded sets.
const (
	labelOther = "other"
	labelNone  = "none"
)

// maxArgRunes bounds each argument's value in a call's log line, and maxArgsBytes the whole.
const (
	maxArgRunes    = 64
	maxArgsBytes   = 512
	maxDetailRunes = 256 // a refusal's text, as the agent read it
)

// observeCalls is the outermost receiving middleware: it times every tool call, meters the
// GitHub requests made on its context, and tells the log and the observer how it ended.
func (s *server) observeCalls(tools []string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || call.Params == nil {
				return next(ctx, method, req)
			}
			tool := labelOther
			if slices.Contains(tools, call.Params.Name) {
				tool = call.Params.Name
			}
			caller := s.callerOf(req)
			meter := &spend.Meter{}
			if s.opts.Calls != nil {
				meter.Each = func() { s.opts.Calls.RequestMade(tool) }
			}
			start := time.Now()
			res, err := next(spend.With(ctx, meter), method, req)
			c := enforce.ToolCall{At: s.now(), Tool: tool, Agent: s.agentLabel(caller), Duration: time.Since(start), Requests: meter.Count()}
			var detail string
			c.Outcome, c.Rule, detail = outcomeOf(res, err)
			s.logCall(ctx, c, caller, call.Params.Name, call.Params.Arguments, detail)
			if s.opts.Calls != nil {
				s.opts.Calls.CallEnded(ctx, c)
			}
			return res, err
		}
	}
}

// agentLabel is the agent a call is counted under: the configured agent of that name (the
// stdio server's own agent too), "none" when the call has none, else "other".
func (s *server) agentLabel(name string) string {
	if name == "" {
		return labelNone
	}
	if s.opts.Agent != "" && strings.EqualFold(name, s.opts.Agent) {
		return s.opts.Agent
	}
	for _, a := range s.opts.Agents {
		if strings.EqualFold(a.Name, name) {
			return a.Name
		}
	}
	return labelOther
}

// outcomeOf sorts how a call ended: a refusal by its rule (a limit's refusal is rate_limited),
// a protocol error about the call's own parameters (an unknown tool) as refused for its
// arguments, any other protocol error as an error. detail is the refusal or error text.
func outcomeOf(res mcp.Result, err error) (outcome, rule, detail string) {
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams {
			return enforce.OutcomeRefused, string(policy.RuleArguments), err.Error()
		}
		return enforce.OutcomeError, "", err.Error()
	}
	tr, ok := res.(*mcp.CallToolResult)
	if !ok || !tr.IsError {
		return enforce.OutcomeOK, "", ""
	}
	var refusal *policy.Refusal
	if e := tr.GetError(); e != nil && errors.As(e, &refusal) {
		switch k := refusal.Kind(); k {
		case policy.RuleRate, policy.RuleBudget:
			return enforce.OutcomeRateLimited, string(k), refusal.Error()
		default:
			return enforce.OutcomeRefused, string(k), refusal.Error()
		}
	}
	return enforce.OutcomeRefused, string(policy.RuleOther), toolText(tr)
}

func toolText(tr *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range tr.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// logCall writes the call's one line: at debug when it went through, at info when refused
// (the agent can act on it), at error when ralph-gate could not complete it. The arguments and
// the refusal are the agent's text: each is cut short and escaped.
func (s *server) logCall(ctx context.Context, c enforce.ToolCall, caller, name string, args json.RawMessage, detail string) {
	log := zerolog.Ctx(ctx)
	ev := log.Debug()
	switch c.Outcome {
	case enforce.OutcomeRefused, enforce.OutcomeRateLimited:
		ev = log.Info()
	case enforce.OutcomeError:
		ev = log.Error()
	}
	if !ev.Enabled() {
		return
	}
	ev = ev.Str("tool", c.Tool).Str("agent", c.Agent).Int64("took_ms", c.Duration.Milliseconds()).Str("outcome", c.Outcome).Int("github_requests", c.Requests)
	if c.Tool == labelOther {
		ev = ev.Str("asked_tool", escaped(name, maxArgRunes))
	}
	if c.Agent == labelOther {
		ev = ev.Str("caller", escaped(caller, maxArgRunes))
	}
	if c.Rule != "" {
		ev = ev.Str("rule", c.Rule)
	}
	switch {
	case c.Outcome == enforce.OutcomeError:
		ev = ev.Str("error", detail) // ralph-gate's own failure, whole
	case detail != "":
		ev = ev.Str("detail", escaped(detail, maxDetailRunes))
	}
	ev.Str("arguments", argumentsText(args)).Msg("tool call")
}

// argumentsText renders a call's arguments as name=value pairs in name order, each value cut
// to maxArgRunes and escaped, the whole cut to maxArgsBytes; arguments that are not a JSON
// object are shown escaped as they came.
func argumentsText(raw json.RawMessage) string {
	var args map[string]json.RawMessage
	if len(raw) == 0 {
		return ""
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return escaped(string(raw), maxArgRunes)
	}
	names := make([]string, 0, len(args))
	for n := range args {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		v := args[n]
		var str string
		if json.Unmarshal(v, &str) == nil {
			b.WriteString(bare(n) + "=" + escaped(str, maxArgRunes))
		} else {
			b.WriteString(bare(n) + "=" + bare(string(v)))
		}
		if b.Len() > maxArgsBytes {
			break
		}
	}
	return cut(b.String(), maxArgsBytes)
}

// bare is s as it is when it is a short word or number (an argument's name, a number, a
// boolean), else escaped.
func bare(s string) string {
	if s == "" || len(s) > maxArgRunes {
		return escaped(s, maxArgRunes)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return escaped(s, maxArgRunes)
		}
	}
	return s
}

// escaped quotes s, cut to at most n runes, with every control, format (bidi) and
// non-printable character escaped, so a line shows exactly what the agent sent and nothing
// it could hide.
func escaped(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	more := false
	if utf8.RuneCountInString(s) > n {
		s, more = string([]rune(s)[:n]), true
	}
	q := strconv.QuoteToGraphic(s)
	if more {
		q += "…"
	}
	return q
}

// cut shortens s to at most n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
