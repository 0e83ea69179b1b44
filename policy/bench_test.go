package policy

import "testing"

func BenchmarkDecide(b *testing.B) {
	m := DefaultMachine()
	changes := []Change{
		{From: sRFP, To: sPIP, Actor: "agent-1", ActorKind: ActorAgent, Group: []Member{{Number: 1, Title: "A", State: sRFP}, {Number: 2, Title: "B", State: sPIR}, {Number: 3, Title: "C", State: sCancel}}},
		{From: sBacklog, To: sIP, Actor: "agent-1", ActorKind: ActorAgent},
		{From: sRIP, To: sRFP, Actor: "agent-2", ActorKind: ActorAgent, LockHolder: "agent-1"},
		{From: sHN, To: sBacklog, Actor: "alice", ActorKind: ActorHuman},
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m.Decide(changes[i%len(changes)])
	}
}

func BenchmarkDetectPipeline(b *testing.B) {
	in := PipelineInput{IsGroup: true, GroupPrimary: 1, Options: PipelineOptions{StreamCount: 2}}
	for i, s := range []string{sRFP, sRFP, sIR, sDone, sCancel, sRFP, sIR, sRFP} {
		in.Issues = append(in.Issues, PipelineIssue{Number: i + 1, Title: "T", WorkflowState: s, Estimate: "S"})
	}
	b.ReportAllocs()
	for b.Loop() {
		DetectPipeline(in)
	}
}
