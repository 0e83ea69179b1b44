package app

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app/config"
)

// backtestWindow is how far back a policy change's check run replays the organization's
// recorded moves.
const backtestWindow = 7 * 24 * time.Hour

// backtestChange is what a proposed policy would decide differently from what was decided over
// the organization's moves of the last 7 days (Markdown for the check run; "" when it cannot
// be computed: the check run says the rest all the same). A check run on a public repository
// is public: there it gives the counts alone, without issues or actors.
func (a *App) backtestChange(ctx context.Context, owner string, cur orgPolicy, hasCur bool, next orgPolicy, private bool) string {
	var current config.Config
	if hasCur {
		current = cur.cfg
	}
	until := time.Now()
	res, err := Backtest(ctx, a.store, owner, current, next.cfg, a.appLogin, until.Add(-backtestWindow), until)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("org", owner).Msg("the policy change's backtest failed; its check run goes without it")
		return ""
	}
	if private {
		return res.Markdown()
	}
	return "### Backtest of the proposed policy\n\n" + res.Summary() + "\n\n" +
		"The repository is public, and so is this check run: the issues and actors are left out. " +
		"`ralph-gate policy backtest --org " + owner + " --file FILE` lists them."
}
