package policy

import (
	"fmt"
	"strings"
)

// Recommendation tells an orchestrator what to do about convergence.
type Recommendation string

const (
	Proceed  Recommendation = "proceed"
	Wait     Recommendation = "wait"
	Escalate Recommendation = "escalate"
)

func (r Recommendation) String() string { return string(r) }

// ConvergenceResult is the check_convergence answer.
type ConvergenceResult struct {
	Converged      bool                `json:"converged"`
	TargetState    string              `json:"targetState"`
	Total          int                 `json:"total"` // members that count (not Canceled)
	Ready          int                 `json:"ready"`
	Blocking       []ConvergenceMember `json:"blocking"`
	Recommendation Recommendation      `json:"recommendation"`
}

// ConvergenceMember is a member that has not reached the target yet.
type ConvergenceMember struct {
	Number       int    `json:"number"`
	Title        string `json:"title"`
	CurrentState string `json:"currentState"`
	// DistanceToTarget is how many pipeline steps remain; -1 when the member is off the
	// pipeline (Human Needed, unset, unknown) and no distance exists.
	DistanceToTarget int `json:"distanceToTarget"`
}

// CheckConvergence reports whether every non-Canceled member is at target or later on the
// pipeline. Escalate when a blocker waits in Human Needed, wait otherwise. An empty group
// trivially converges. target must be a pipeline state.
func (m *Machine) CheckConvergence(target string, members []Member) (ConvergenceResult, error) {
	ti := m.PipelineIndex(target)
	if ti < 0 {
		pipe := m.Pipeline()
		why := "Valid target states are the pipeline states " + strings.Join(pipe, ", ")
		tried := fmt.Sprintf("Unknown target state %q", target)
		if m.IsState(target) {
			tried = fmt.Sprintf("Target state %q is off the pipeline", target)
		}
		r := NewRetryRefusal(tried, why, Retry{With: []Suggestion{{Arg: ArgTarget, Kind: Text, Values: pipe}}}).Because(RuleArguments)
		r.Unknown = !m.IsState(target)
		return ConvergenceResult{}, r
	}
	res := ConvergenceResult{TargetState: target, Blocking: []ConvergenceMember{}, Recommendation: Proceed}
	for _, mb := range members {
		if m.isCanceledLike(mb.State) {
			continue
		}
		res.Total++
		i := m.PipelineIndex(mb.State)
		if i >= ti {
			res.Ready++
			continue
		}
		dist := -1
		if i >= 0 {
			dist = ti - i
		}
		res.Blocking = append(res.Blocking, ConvergenceMember{Number: mb.Number, Title: mb.Title, CurrentState: mb.State, DistanceToTarget: dist})
		if m.isEscalated(mb.State) {
			res.Recommendation = Escalate
		} else if res.Recommendation == Proceed {
			res.Recommendation = Wait
		}
	}
	res.Converged = len(res.Blocking) == 0
	return res, nil
}
