package ghboard

import (
	"sync"
	"time"
)

// GitHub's secondary limits allow about 80 content-creating requests a minute and 500 an hour
// per identity ("Rate limits for the REST API", "About secondary rate limits"). A comment is
// content; the app's comments are its explanations. Rather than discover the limit — GitHub
// answers with a penalty that stops every write of the installation, reverts included — the
// client keeps its own count and holds a comment back, below the limit, with the wait it
// needs: the job that wanted it is snoozed and explains later.

// Defaults below GitHub's limits, leaving room for a person's use of the same identity and for
// clock differences between the app and GitHub.
const (
	DefaultContentPerMinute = 60
	DefaultContentPerHour   = 450
)

// contentBudget counts an identity's content-creating requests in the last minute and hour.
type contentBudget struct {
	mu                 sync.Mutex
	perMinute, perHour int
	sent               []time.Time // oldest first, within the last hour
}

// WithContentBudget sets how many comments the client creates at most per minute and per
// hour (defaults DefaultContentPerMinute, DefaultContentPerHour); 0 or less lifts that bound.
func WithContentBudget(perMinute, perHour int) Option {
	return func(c *Client) { c.content.perMinute, c.content.perHour = perMinute, perHour }
}

// reserve counts one content-creating request at now, or says how long until there is room.
func (b *contentBudget) reserve(now time.Time) (wait time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	hourAgo, minuteAgo := now.Add(-time.Hour), now.Add(-time.Minute)
	i := 0
	for i < len(b.sent) && !b.sent[i].After(hourAgo) {
		i++
	}
	b.sent = b.sent[i:]
	if b.perHour > 0 && len(b.sent) >= b.perHour {
		return b.sent[len(b.sent)-b.perHour].Add(time.Hour).Sub(now), false
	}
	if b.perMinute > 0 {
		inMinute := 0
		for j := len(b.sent) - 1; j >= 0 && b.sent[j].After(minuteAgo); j-- {
			inMinute++
		}
		if inMinute >= b.perMinute {
			return b.sent[len(b.sent)-b.perMinute].Add(time.Minute).Sub(now), false
		}
	}
	b.sent = append(b.sent, now)
	return 0, true
}

// ContentRoom reports how many comments the client may create now before its minute or hour
// bound holds them back.
func (c *Client) ContentRoom() int {
	b := &c.content
	b.mu.Lock()
	defer b.mu.Unlock()
	now := c.now()
	room := -1
	if b.perHour > 0 {
		n := 0
		for _, t := range b.sent {
			if t.After(now.Add(-time.Hour)) {
				n++
			}
		}
		room = max(b.perHour-n, 0)
	}
	if b.perMinute > 0 {
		n := 0
		for _, t := range b.sent {
			if t.After(now.Add(-time.Minute)) {
				n++
			}
		}
		if r := max(b.perMinute-n, 0); room < 0 || r < room {
			room = r
		}
	}
	if room < 0 {
		return 1 << 30
	}
	return room
}
