package app

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrWarmUnavailable is returned when "Warm experts overnight" is switched
// on in a build or on a machine that lacks a warmer, an idle source or a
// power source.
var ErrWarmUnavailable = errors.New("app: overnight warming needs a warmer, an idle source and a power source")

// setWarm switches overnight warming on or off and remembers the choice.
func (a *App) setWarm(on bool) {
	a.mu.Lock()
	if on && !a.st.CanWarm {
		a.mu.Unlock()
		a.problem(subWarm, "Warm experts overnight", ErrWarmUnavailable)
		return
	}
	a.st.WarmEnabled = on
	a.saveLocked()
	if on {
		defer a.solved(subWarm) // after a.mu is released below
	}
	switch {
	case on && a.warmStop == nil && a.ctx.Err() == nil:
		ctx, cancel := context.WithCancel(a.ctx)
		a.warmStop = cancel
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.warmLoop(ctx)
		}()
	case !on && a.warmStop != nil:
		a.warmStop()
		a.warmStop = nil
		a.st.WarmNote = ""
	}
	a.mu.Unlock()
	a.update(func(*State) {})
}

// warmLoop checks every Config.WarmPoll whether the machine is idle and on
// AC power, warms while it stays so, and stops at the first sign of the
// user (or on battery) to resume at the next idle stretch.
func (a *App) warmLoop(ctx context.Context) {
	poll := a.cfg.WarmPoll
	if poll <= 0 {
		poll = 30 * time.Second
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		ok, why := a.warmAllowed(ctx)
		a.update(func(s *State) { s.WarmNote = why })
		if ok {
			switch done, err := a.warmWhileAllowed(ctx, tick.C); {
			case err != nil:
				a.problem(subWarm, "Warming failed", err)
				a.setWarm(false)
				return
			case done:
				a.mu.Lock()
				total := a.warmTotal
				a.warmTotal = WarmResult{}
				a.mu.Unlock()
				a.notify("Warming finished", fmt.Sprintf("Fetched %d experts (%s): every expert is on disk.",
					total.Experts, FormatBytes(uint64(max(total.Bytes, 0)))))
				a.refreshInstall(ctx)
				a.setWarm(false)
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// warmAllowed says whether warming may run now, and if not, why.
func (a *App) warmAllowed(ctx context.Context) (bool, string) {
	idle, err := a.deps.Idle.IdleTime(ctx)
	if err != nil {
		a.log.Warn("idle time", "err", err)
		return false, "idle time unknown"
	}
	if idle < a.live().WarmIdleAfter {
		return false, "warming waits for the machine to be idle"
	}
	ac, err := a.deps.Power.OnAC(ctx)
	if err != nil {
		a.log.Warn("power source", "err", err)
		return false, "power source unknown"
	}
	if !ac {
		return false, "warming waits for AC power"
	}
	return true, ""
}

// warmWhileAllowed runs the warmer until it finishes (done), fails (err),
// or the user comes back (neither: it resumes at the next idle stretch).
func (a *App) warmWhileAllowed(ctx context.Context, tick <-chan time.Time) (done bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	release := a.hold("warming experts")
	defer release()
	type result struct {
		r   WarmResult
		err error
	}
	out := make(chan result, 1)
	a.update(func(s *State) { s.Warming, s.WarmNote = true, "" })
	go func() {
		r, err := a.deps.Warmer.Warm(wctx, func(p Progress) {
			a.update(func(s *State) { s.Warm = p })
		})
		out <- result{r, err}
	}()
	for {
		select {
		case res := <-out:
			a.mu.Lock()
			a.warmTotal.Experts += res.r.Experts
			a.warmTotal.Bytes += res.r.Bytes
			a.st.Warming = false
			a.mu.Unlock()
			a.update(func(*State) {})
			switch {
			case res.err == nil:
				return true, nil
			case wctx.Err() != nil:
				return false, nil
			}
			return false, res.err
		case <-tick:
			if ok, why := a.warmAllowed(ctx); !ok {
				a.log.Info("warming paused", "why", why)
				a.update(func(s *State) { s.WarmNote = why })
				cancel()
			}
		}
	}
}

func (a *App) refreshInstall(ctx context.Context) {
	if a.deps.Downloader == nil {
		return
	}
	inst, err := a.deps.Downloader.Installed(ctx)
	if err != nil {
		a.log.Warn("install state", "err", err)
		return
	}
	a.update(func(s *State) { s.Install = inst })
}
