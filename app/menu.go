package app

import (
	"fmt"
	"strings"
	"time"
)

// ItemID names one entry of the menu-bar menu. The tray renders entries by
// ID, so an entry keeps its place while its label, visibility and check
// mark change.
type ItemID int

// The menu's entries, top to bottom.
const (
	ItemStatus ItemID = iota
	ItemDownloadStream
	ItemDownloadFull
	ItemPause
	ItemUpgrade
	ItemDrafter
	ItemWarm
	ItemOpenWeb
	ItemCopyAddress
	ItemServer
	ItemDrives
	ItemOpenData
	ItemLogin
	ItemQuit
	numItems
)

// Labels of entries whose text does not depend on the state. Tests and the
// tray find entries by these.
const (
	LabelDownloadStream = "Download (stream, 215 GB)…"
	LabelDownloadFull   = "Download full (1.7 TB)…"
	LabelPause          = "Pause download"
	LabelResume         = "Resume download"
	LabelUpgrade        = "Upgrade to full install"
	LabelDrafter        = "Download the drafter (6 GB)…"
	LabelDrafterReady   = "Drafter installed"
	LabelWarm           = "Warm experts overnight"
	LabelOpenWeb        = "Open Deltafin…"
	LabelCopyAddress    = "Copy API address"
	LabelStartServer    = "Start server"
	LabelStopServer     = "Stop server"
	LabelDrives         = "Expert drives…"
	LabelOpenData       = "Open data folder"
	LabelLogin          = "Launch at login"
	LabelQuit           = "Quit Deltafin"
)

// MenuItem is one rendered entry: a plain value the tray copies into the
// platform menu, so the menu's logic is tested without a tray.
type MenuItem struct {
	ID       ItemID
	Label    string
	Enabled  bool
	Visible  bool
	Checkbox bool
	Checked  bool
	// SeparatorAfter is fixed per entry: separators cannot be hidden in
	// every tray implementation, so they sit between stable groups.
	SeparatorAfter bool
}

// Menu is everything the menu bar shows: the title beside the icon
// (progress while downloading or warming), the tooltip and the entries.
type Menu struct {
	Title   string
	Tooltip string
	Items   []MenuItem
	// Busy is set while a download or warming runs, with Percent its
	// progress: on Linux, where few StatusNotifierItem hosts draw a title,
	// the icon itself carries a progress bar (trayicon.go).
	Busy    bool
	Percent int
}

// Item returns the entry with the given ID.
func (m Menu) Item(id ItemID) MenuItem {
	for _, it := range m.Items {
		if it.ID == id {
			return it
		}
	}
	return MenuItem{ID: id}
}

// InstallMode is what the data directory holds.
type InstallMode int

// Install modes: nothing, the spine with experts on demand, everything.
const (
	InstallNone InstallMode = iota
	InstallStream
	InstallFull
)

// DownloadMode is what a download asks for.
type DownloadMode int

// Download modes: ModeFull from a stream install is the upgrade.
const (
	ModeStream DownloadMode = iota + 1
	ModeFull
)

func (m DownloadMode) String() string {
	switch m {
	case ModeStream:
		return "stream"
	case ModeFull:
		return "full"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// InstallState describes the model on disk, as the downloader reports it.
type InstallState struct {
	Mode          InstallMode
	ExpertsCached int // routed experts present on disk
	ExpertsTotal  int
	// Spine, for a stream install whose spine is not all verified, says
	// how much is ("spine 100% present, 0% verified"); "" when all is.
	Spine string
	// Unverified is set when any byte on disk could not be verified
	// against the hub (downloader.Unverified): the menu and the page say
	// "unverified", and the server refuses the install unless
	// --allow-unverified.
	Unverified bool
}

// Progress is one progress event of a download or of warming.
type Progress struct {
	Done, Total int64         // bytes
	Rate        float64       // bytes per second
	ETA         time.Duration // 0 when unknown
	// Waiting, when set, says the download waits for the hub before a retry
	// ("waiting for the hub (rate limited), retrying in 30 s").
	Waiting string
}

// Fraction is Done/Total in [0, 1].
func (p Progress) Fraction() float64 {
	if p.Total <= 0 {
		return 0
	}
	return min(1, float64(p.Done)/float64(p.Total))
}

// State is a snapshot of what the app is doing; BuildMenu is a pure function
// of it.
type State struct {
	Install InstallState
	// Downloading is set while a download runs; Pending is the mode of a
	// download that was started and has not finished (running, paused, or
	// interrupted by a quit or a crash).
	Downloading bool
	// Connecting is set while the disk check before a download lists the
	// repository.
	Connecting  bool
	Pending     DownloadMode
	Upgrade     bool // the pending download is an upgrade from stream
	Download    Progress
	WarmEnabled bool
	Warming     bool
	Warm        Progress
	WarmNote    string // why warming waits ("waiting for idle", ...)
	ServerAddr  string // base URL while serving
	Demo        bool   // serving the built-in demo model
	Login       bool
	Problem     string // the last error that needs the user, cut to a menu line
	// ProblemWhole is Problem uncut, for the headless line.
	ProblemWhole string
	Answering    Answering
	// What this build wires in: entries that need a missing part are
	// disabled.
	CanDownload, CanWarm, CanServe bool
	// The drafter (drafter.go): installed, or downloading with its
	// progress; CanDraft when the build wires its installer in.
	DrafterInstalled, DrafterDownloading, CanDraft bool
	Drafter                                        Progress
}

// BuildMenu renders the state into the menu. It has no side effects.
func BuildMenu(s State) Menu {
	nothing := s.Install.Mode == InstallNone && s.Pending == 0
	canStart := nothing && s.CanDownload && !s.Connecting
	paused := s.Pending != 0 && !s.Downloading
	upgrade := s.Install.Mode == InstallStream && s.Pending == 0
	items := []MenuItem{
		{ID: ItemStatus, Label: statusLine(s), Visible: true, SeparatorAfter: true},
		{ID: ItemDownloadStream, Label: LabelDownloadStream, Enabled: canStart, Visible: nothing},
		{ID: ItemDownloadFull, Label: LabelDownloadFull, Enabled: canStart, Visible: nothing},
		{ID: ItemPause, Label: LabelPause, Enabled: s.Pending != 0 && s.CanDownload, Visible: s.Pending != 0},
		{ID: ItemUpgrade, Label: LabelUpgrade, Enabled: upgrade && s.CanDownload, Visible: upgrade},
		{ID: ItemDrafter, Label: drafterLabel(s), Enabled: s.CanDraft && !s.DrafterInstalled && !s.DrafterDownloading,
			Visible: s.CanDraft, SeparatorAfter: true},
		{ID: ItemWarm, Label: LabelWarm, Checkbox: true, Checked: s.WarmEnabled,
			Enabled: s.WarmEnabled || (s.Install.Mode == InstallStream && s.CanWarm), Visible: true, SeparatorAfter: true},
		{ID: ItemOpenWeb, Label: LabelOpenWeb, Enabled: s.ServerAddr != "", Visible: true},
		{ID: ItemCopyAddress, Label: LabelCopyAddress, Enabled: s.ServerAddr != "", Visible: true},
		{ID: ItemServer, Label: LabelStartServer, Enabled: s.CanServe, Visible: true},
		{ID: ItemDrives, Label: LabelDrives, Enabled: s.Install.Mode != InstallNone, Visible: true},
		{ID: ItemOpenData, Label: LabelOpenData, Enabled: true, Visible: true},
		{ID: ItemLogin, Label: LabelLogin, Checkbox: true, Checked: s.Login, Enabled: true, Visible: true, SeparatorAfter: true},
		{ID: ItemQuit, Label: LabelQuit, Enabled: true, Visible: true},
	}
	if paused {
		items[ItemPause].Label = LabelResume
	}
	if s.ServerAddr != "" {
		items[ItemServer].Label = LabelStopServer
	}
	m := Menu{Items: items, Tooltip: "Deltafin: " + statusLine(s)}
	switch {
	case s.Downloading:
		m.Busy, m.Percent = true, percent(s.Download.Fraction())
		m.Title = fmt.Sprintf("↓ %d%%", m.Percent)
	case s.Warming:
		m.Busy, m.Percent = true, percent(s.Warm.Fraction())
		m.Title = fmt.Sprintf("warming %d%%", m.Percent)
	case s.Answering.Running:
		m.Title = "answering…"
	}
	return m
}

// drafterLabel is the drafter's entry: what a click does, or its progress.
func drafterLabel(s State) string {
	switch {
	case s.DrafterInstalled:
		return LabelDrafterReady
	case s.DrafterDownloading:
		return fmt.Sprintf("Downloading the drafter %d%%", percent(s.Drafter.Fraction()))
	}
	return LabelDrafter
}

func statusLine(s State) string {
	if s.Problem != "" {
		return s.Problem
	}
	var b strings.Builder
	switch {
	case s.Connecting:
		b.WriteString("Connecting to the hub…")
	case s.Downloading:
		verb := "Downloading"
		if s.Upgrade {
			verb = "Upgrading"
		}
		fmt.Fprintf(&b, "%s %d%%", verb, percent(s.Download.Fraction()))
		if s.Download.Rate > 0 {
			fmt.Fprintf(&b, " · %s/s", FormatBytes(uint64(s.Download.Rate)))
		}
		if s.Download.Waiting != "" {
			b.WriteString(" · " + s.Download.Waiting)
		} else if s.Download.ETA > 0 {
			fmt.Fprintf(&b, " · %s left", formatETA(s.Download.ETA))
		}
	case s.Pending != 0:
		fmt.Fprintf(&b, "Download paused at %d%% (%s)", percent(s.Download.Fraction()), s.Pending)
	case s.Install.Mode == InstallFull:
		b.WriteString("Full install")
		if s.Install.Unverified {
			b.WriteString(" · unverified")
		}
	case s.Install.Mode == InstallStream:
		pct := 0
		if s.Install.ExpertsTotal > 0 {
			pct = percent(float64(s.Install.ExpertsCached) / float64(s.Install.ExpertsTotal))
		}
		fmt.Fprintf(&b, "Stream install, %d%% of experts cached", pct)
		if s.Install.Unverified {
			b.WriteString(" · unverified")
		}
		if s.Install.Spine != "" {
			b.WriteString(" · " + s.Install.Spine)
		}
	default:
		b.WriteString("Not installed")
	}
	if s.Warming {
		fmt.Fprintf(&b, " · warming %d%%", percent(s.Warm.Fraction()))
	} else if s.WarmEnabled && s.WarmNote != "" {
		b.WriteString(" · " + s.WarmNote)
	}
	if s.Demo {
		b.WriteString(" · " + DemoLabel)
	}
	if s.ServerAddr != "" {
		b.WriteString(" · serving " + s.ServerAddr)
	}
	if line := s.Answering.line(); line != "" {
		b.WriteString(" · " + line)
	}
	return b.String()
}

// percent truncates, so 100% means done, never 99.6%.
func percent(f float64) int { return int(f * 100) }

// formatETA rounds to the unit a person plans with.
func formatETA(d time.Duration) string {
	switch {
	case d >= 90*time.Minute:
		return fmt.Sprintf("%d h", int((d+30*time.Minute)/time.Hour))
	case d >= 90*time.Second:
		return fmt.Sprintf("%d min", int((d+30*time.Second)/time.Minute))
	}
	return fmt.Sprintf("%d s", int(d.Round(time.Second)/time.Second))
}

// FormatBytes prints a byte count in decimal units, as disk vendors and the
// hub do (1 GB = 1e9 bytes).
func FormatBytes(n uint64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
