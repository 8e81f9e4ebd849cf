//go:build linux || (darwin && cgo)

package app

import (
	"context"
	"log/slog"
	"runtime"
	"time"

	"fyne.io/systray"
)

// runTray shows the app in the menu bar (a StatusNotifierItem with a
// com.canonical.dbusmenu menu on Linux) until Quit or ctx ends. systray
// runs once per process and, on macOS, on the main thread: call this from
// main's goroutine.
func runTray(ctx context.Context, a *App, templateIcon, icon []byte) error {
	a.SetQuit(systray.Quit)
	stop := context.AfterFunc(ctx, systray.Quit)
	defer stop()
	done := make(chan struct{})
	systray.Run(func() {
		systray.SetTemplateIcon(templateIcon, icon)
		v := &trayView{icon: icon, log: a.log}
		v.build(a.Menu(), a.Click)
		go v.follow(a, done)
	}, func() { close(done) })
	return nil
}

// trayView mirrors Menu values into systray items, which it creates once.
type trayView struct {
	items [numItems]*systray.MenuItem
	last  Menu
	icon  []byte // the plain icon, under the progress bar on Linux
	log   *slog.Logger
}

func (v *trayView) build(m Menu, click func(ItemID)) {
	for _, it := range m.Items {
		var mi *systray.MenuItem
		if it.Checkbox {
			mi = systray.AddMenuItemCheckbox(it.Label, "", it.Checked)
		} else {
			mi = systray.AddMenuItem(it.Label, "")
		}
		if !it.Enabled {
			mi.Disable()
		}
		if !it.Visible {
			mi.Hide()
		}
		if it.SeparatorAfter {
			systray.AddSeparator()
		}
		v.items[it.ID] = mi
		// systray drops a click when nobody is receiving, so each item
		// has a goroutine that only forwards.
		go func(id ItemID, ch <-chan struct{}) {
			for range ch {
				click(id)
			}
		}(it.ID, mi.ClickedCh)
	}
	systray.SetTitle(m.Title)
	systray.SetTooltip(m.Tooltip)
	v.last = m
}

// follow re-renders after state changes, at most a few times a second:
// on macOS every setter waits for the main thread.
func (v *trayView) follow(a *App, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-a.Changed():
		}
		v.render(a.Menu())
		select {
		case <-done:
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (v *trayView) render(m Menu) {
	for i, it := range m.Items {
		old, mi := v.last.Items[i], v.items[it.ID]
		if it.Label != old.Label {
			mi.SetTitle(it.Label)
		}
		if it.Enabled != old.Enabled {
			if it.Enabled {
				mi.Enable()
			} else {
				mi.Disable()
			}
		}
		if it.Checked != old.Checked {
			if it.Checked {
				mi.Check()
			} else {
				mi.Uncheck()
			}
		}
		if it.Visible != old.Visible {
			if it.Visible {
				mi.Show()
			} else {
				mi.Hide()
			}
		}
	}
	if m.Title != v.last.Title {
		systray.SetTitle(m.Title)
	}
	if runtime.GOOS == "linux" && (m.Busy != v.last.Busy || m.Percent != v.last.Percent) {
		v.setProgressIcon(m)
	}
	if m.Tooltip != v.last.Tooltip {
		systray.SetTooltip(m.Tooltip)
	}
	v.last = m
}

// setProgressIcon draws m's progress into the icon, or restores the plain
// one; macOS shows the title beside the icon instead.
func (v *trayView) setProgressIcon(m Menu) {
	if !m.Busy {
		systray.SetIcon(v.icon)
		return
	}
	b, err := progressIcon(v.icon, m.Percent)
	if err != nil {
		v.log.Warn("tray icon", "err", err)
		return
	}
	systray.SetIcon(b)
}
