package sandbox

import (
	"strconv"
	"strings"

	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/marker"
)

// summarized lists, by issue number, the refused moves the app's storm summaries explain
// (a summary is posted on one issue and names the issue of each move it explains; the
// suites' repositories are one per seed, so the number identifies the issue).
func summarized(st ghsim.State, appLogin string) map[int][]marker.Transition {
	out := map[int][]marker.Transition{}
	for _, is := range st.Issues {
		for _, c := range is.Comments {
			if c.Author != appLogin || !strings.HasPrefix(c.Body, marker.ViolationSummary) {
				continue
			}
			byIssue, _ := marker.Explained(c.Body, "")
			for issue, ms := range byIssue {
				n, err := strconv.Atoi(issue[strings.LastIndex(issue, "#")+1:])
				if err == nil {
					out[n] = append(out[n], ms...)
				}
			}
		}
	}
	return out
}
