package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/store"
)

// reportPolicyCheck creates the push's check run: in force, unchanged, older than the policy in
// force, or refused (who may change the policy, every problem by key path and line). A check
// run that cannot be created is logged: the outcome stands either way (doctor names a missing
// Checks permission).
func (a *App) reportPolicyCheck(ctx context.Context, d policyDecision) {
	logger := zerolog.Ctx(ctx)
	f := d.file
	out := policyCheckOutput(d)
	conclusion := "success"
	if d.outcome == store.PolicyRefused || len(d.problems) > 0 {
		conclusion = "failure"
	}
	now := github.Timestamp{Time: time.Now()}
	_, _, err := f.client.Checks.CreateCheckRun(ctx, f.owner, f.repo, github.CreateCheckRunOptions{
		Name: PolicyCheckName, HeadSHA: f.sha, Status: github.Ptr("completed"), Conclusion: github.Ptr(conclusion),
		CompletedAt: &now, Output: out,
	})
	if err != nil {
		var ge *github.ErrorResponse
		if errors.As(err, &ge) && ge.Response != nil && ge.Response.StatusCode == http.StatusForbidden {
			logger.Warn().Err(err).Msg("policy check run not created: the installation lacks the Checks permission (write); the policy's outcome stands")
			return
		}
		logger.Warn().Err(err).Msg("policy check run not created; the policy's outcome stands")
	}
}

// policyCheckOutput is the check run's text. Everything taken from the file (key paths,
// problems, names) and from GitHub (logins) is shown inside code blocks or as plain
// annotations, with invisible characters dropped: a file cannot write links, images or
// reordered text into the check run.
func policyCheckOutput(d policyDecision) *github.CheckRunOutput {
	f := d.file
	at := fmt.Sprintf("%s at %s", f.path, short(f.sha))
	by := ""
	if f.pusher != "" {
		by = fmt.Sprintf(", pushed by %s,", inlineText(f.pusher))
	}
	var title, summary string
	var text []string
	switch d.outcome {
	case store.PolicyInForce:
		title = "The policy is valid and in force"
		summary = fmt.Sprintf("%s%s is in force for %s's projects, for the changes made from now on.", at, by, f.owner)
	case store.PolicyUnchanged:
		title = "The policy is valid and unchanged"
		summary = fmt.Sprintf("%s is the policy in force.", at)
	case store.PolicyNotNewer:
		title = "The policy is valid; a newer commit's is in force"
		if len(d.problems) > 0 {
			title = fmt.Sprintf("%d problem(s); a newer commit's policy is in force", len(d.problems))
		}
		summary = fmt.Sprintf("%s is older than the policy in force, which comes from %s, a newer commit of the branch: it is not put in force.", at, short(d.newerSHA))
	default:
		switch {
		case d.refusedWhy != "":
			title = "Not put in force: only " + d.whoMay + " may change the policy"
			summary = fmt.Sprintf("%s%s was refused: %s. Only %s may change %s's policy: ask one of them to push this change, or to merge a pull request that makes it. The policy in force stays. "+
				"The commit stays on the branch: revert it, or the next change a policy admin pushes puts it in force with theirs (that push's check run lists every change against the policy in force).",
				at, by, inlineText(d.refusedWhy), d.whoMay, f.owner)
		default:
			title = fmt.Sprintf("%d problem(s): the previous policy stays in force", len(d.problems))
			summary = fmt.Sprintf("%s was refused: the organization's last valid policy stays in force until a valid file is pushed. "+
				"`ralph-gate validate --org-policy` gives the same problems for the same file.", at)
		}
	}
	if len(d.problems) > 0 {
		text = append(text, "### Problems\n\n"+fenced(capText(problemLines(d.problems), maxCheckText/2)))
	}
	if len(d.changes) > 0 {
		what := "What it changes"
		if d.outcome == store.PolicyRefused {
			what = "What it would change"
		}
		text = append(text, "### "+what+"\n\n"+fenced(strings.Join(capLines(d.changes, 100), "\n")))
	}
	if d.backtest != "" {
		text = append(text, d.backtest)
	}
	out := &github.CheckRunOutput{Title: github.Ptr(capText(title, 200)), Summary: github.Ptr(summary)}
	if len(text) > 0 {
		out.Text = github.Ptr(capText(strings.Join(text, "\n\n"), maxCheckText))
	}
	for _, pr := range d.problems {
		if len(out.Annotations) == maxAnnotations {
			break
		}
		line := max(pr.Line, 1)
		out.Annotations = append(out.Annotations, &github.CheckRunAnnotation{Path: github.Ptr(f.path), StartLine: github.Ptr(line), EndLine: github.Ptr(line),
			AnnotationLevel: github.Ptr("failure"), Title: github.Ptr(capText(inlineText(pr.Path), 200)), Message: github.Ptr(capText(enforce.VisibleText(pr.Path+": "+pr.Message), 2000))})
	}
	return out
}

// fenced is text as a Markdown code block: nothing in it is a link, an image or markup; its
// invisible characters are dropped.
func fenced(text string) string {
	text = enforce.VisibleText(text)
	fence := strings.Repeat("`", max(3, longestBackticks(text)+1))
	return fence + "text\n" + text + "\n" + fence
}

// inlineText is a short value from outside (a login, a reason) shown in Markdown prose: its
// invisible characters dropped, and every character Markdown gives a meaning escaped.
func inlineText(s string) string {
	s = enforce.VisibleText(strings.NewReplacer("\n", " ", "\t", " ").Replace(s))
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_{}[]()<>#+-.!|~&", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func longestBackticks(s string) int {
	best, n := 0, 0
	for _, r := range s {
		if r == '`' {
			n++
			best = max(best, n)
			continue
		}
		n = 0
	}
	return best
}
