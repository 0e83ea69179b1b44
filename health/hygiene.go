package health

import (
	"fmt"
	"strings"
	"time"
)

// hygiene lists what needs a person's attention, most pressing first: work held by an agent
// that may be gone (stale locks, oldest first), states over their WIP limit (display order),
// items waiting long for a person (longest first), items ready to be picked up since their
// blockers closed, and items with no state. Within each kind the order is the lists' own, so
// the same store always gives the same list.
func (r *Reader) hygiene(p Project) []Finding {
	out := []Finding{}
	for _, l := range p.Locks {
		if l.Stale {
			out = append(out, Finding{Kind: FindingStaleLock, Item: ptr(l.Item), State: l.Item.State,
				Detail: fmt.Sprintf("%s has been locked by %s in %s for %s (stale after %s): check that %s is still working on it; a person moving the item back to its queue releases the lock",
					name(l.Item), l.Holder, stateName(l.Item.State), Age(l.Age), Age(r.opts.StaleLockAfter), l.Holder)})
		}
	}
	for _, s := range p.States {
		if s.Over {
			out = append(out, Finding{Kind: FindingWIPOverLimit, State: s.Name,
				Detail: fmt.Sprintf("%s holds %d items, over its WIP limit of %d: finish or move items on before more are claimed",
					s.Name, s.Count, s.Limit)})
		}
	}
	for _, w := range p.HumanNeeded {
		if w.Long {
			out = append(out, Finding{Kind: FindingLongHumanWait, Item: ptr(w.Item), State: w.Item.State,
				Detail: fmt.Sprintf("%s has waited in %s for %s (long after %s): it needs a person's decision",
					name(w.Item), w.Item.State, Age(w.Age), Age(r.opts.HumanWaitAfter))})
		}
	}
	for _, it := range p.Unblocked {
		out = append(out, Finding{Kind: FindingUnblockedWaiting, Item: ptr(it), State: it.State,
			Detail: fmt.Sprintf("%s waits in %s and every issue that blocked it is closed: it can be picked up", name(it), it.State)})
	}
	initial := r.opts.Spec.Initial
	for _, it := range p.Unset {
		d := fmt.Sprintf("%s has no Workflow State: give it one", name(it))
		if len(initial) > 0 {
			d += " (" + orList(initial) + ")"
		}
		out = append(out, Finding{Kind: FindingUnsetState, Item: ptr(it), Detail: d})
	}
	return out
}

func ptr(it ItemRef) *ItemRef { return &it }

// name is how a finding names an item: owner/repo#N "title", or the item id of a draft.
func name(it ItemRef) string {
	n := it.ItemID
	if it.Number > 0 {
		n = fmt.Sprintf("%s#%d", it.Repo, it.Number)
	}
	if it.Title != "" {
		n += fmt.Sprintf(" %q", it.Title)
	}
	return n
}

func stateName(s string) string {
	if s == "" {
		return "no state"
	}
	return s
}

func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// Age renders a duration for people, to the minute: 45m, 5h10m, 3d4h.
func Age(d time.Duration) string {
	d = d.Truncate(time.Minute)
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		h := int(d.Hours())
		if m := int(d.Minutes()) % 60; m > 0 {
			return fmt.Sprintf("%dh%dm", h, m)
		}
		return fmt.Sprintf("%dh", h)
	}
	days, h := int(d.Hours())/24, int(d.Hours())%24
	if h > 0 {
		return fmt.Sprintf("%dd%dh", days, h)
	}
	return fmt.Sprintf("%dd", days)
}
