package enforce

import "strings"

// Observer hears about the moves the app makes by itself, for metrics. It must be fast and
// must not fail; a nil Options.Observer means nobody listens. enforce stays free of any
// metrics library: app passes something that implements this.
type Observer interface {
	// AutomationMoved is called once per automated move; cause is cascade, convergence or
	// lifecycle.
	AutomationMoved(cause string)
}

// automationCause names the kind of an automation move from its audit cause text.
func automationCause(cause string) string {
	switch {
	case strings.HasPrefix(cause, "cascade"):
		return "cascade"
	case strings.HasPrefix(cause, "convergence"):
		return "convergence"
	}
	return "lifecycle"
}

func (s *Service) observeAutomation(cause string) {
	if s.opts.Observer != nil {
		s.opts.Observer.AutomationMoved(automationCause(cause))
	}
}
