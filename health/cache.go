package health

import (
	"context"
	"sync"
	"time"
)

// Reporter computes a health report (Reader does, from the store).
type Reporter interface {
	Report(ctx context.Context, now time.Time) (Report, error)
}

// Cache serves the pages a report computed at most MaxAge ago: reading every item of a large
// project (about 75 ms for 10,000 items on SQLite) then happens at most once per MaxAge
// however many people look, and a page view costs its rendering. A view that finds the report
// older starts one refresh in the background and is served the one it has; one that finds it
// more than four times older (or none) waits for a fresh one.
type Cache struct {
	src    Reporter
	maxAge time.Duration

	mu         sync.Mutex
	rep        Report
	have       bool
	refreshing bool
}

// NewCache caches src's reports for maxAge.
func NewCache(src Reporter, maxAge time.Duration) *Cache {
	return &Cache{src: src, maxAge: maxAge}
}

// Report implements Reporter.
func (c *Cache) Report(ctx context.Context, now time.Time) (Report, error) {
	c.mu.Lock()
	age := now.Sub(c.rep.GeneratedAt)
	switch {
	case c.have && age < c.maxAge:
		rep := c.rep
		c.mu.Unlock()
		return rep, nil
	case c.have && age < 4*c.maxAge:
		rep := c.rep
		if !c.refreshing {
			c.refreshing = true
			go c.refresh(context.WithoutCancel(ctx), now)
		}
		c.mu.Unlock()
		return rep, nil
	}
	c.mu.Unlock()
	rep, err := c.src.Report(ctx, now)
	if err != nil {
		return Report{}, err
	}
	c.keep(rep)
	return rep, nil
}

// refresh computes a report as of now (the clock of the view that asked for it).
func (c *Cache) refresh(ctx context.Context, now time.Time) {
	rep, err := c.src.Report(ctx, now)
	c.mu.Lock()
	c.refreshing = false
	c.mu.Unlock()
	if err == nil {
		c.keep(rep)
	}
}

// keep stores rep unless a newer one is kept already.
func (c *Cache) keep(rep Report) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.have || rep.GeneratedAt.After(c.rep.GeneratedAt) {
		c.rep, c.have = rep, true
	}
}
