package web

import "context"

// Control is what the page asks of the menu-bar app: the same state the
// menu shows and the same actions its entries take (package app implements
// it), so a button here and an entry there cannot disagree.
type Control interface {
	// Status is the install, download and warming state now.
	Status() AppStatus
	// Act does what a menu entry does: ActDownloadStream,
	// ActDownloadFull (the download the menu's Download entries start,
	// once the page has shown CheckDownload's figures), ActPause,
	// ActResume, ActUpgrade, ActWarmOn, ActWarmOff.
	Act(action string) error
	// CheckDownload is the disk check before a download of mode ("stream"
	// or "full"): what it fetches and the free disk it leaves, the text
	// the menu's confirmation shows.
	CheckDownload(ctx context.Context, mode string) (string, error)
	// Settings are the app's settings as saved; SaveSettings validates,
	// saves and applies them (what cannot apply at once restarts the
	// server, which loses no answer), and says what happened.
	Settings() Settings
	SaveSettings(Settings) (note string, err error)
}

// The actions of the /model page's buttons.
const (
	ActDownloadStream = "download-stream"
	ActDownloadFull   = "download-full"
	ActPause          = "pause"
	ActResume         = "resume"
	ActUpgrade        = "upgrade"
	ActWarmOn         = "warm-on"
	ActWarmOff        = "warm-off"
)

// AppStatus is the app's state as /model shows it.
type AppStatus struct {
	Line    string `json:"line"`    // the menu's status line
	Install string `json:"install"` // "none" | "stream" | "full"
	// Verification is "verified", or "unverified" when bytes on disk
	// could not be checked against the hub.
	Verification string `json:"verification"`
	// ExpertsOnDisk of ExpertsTotal routed experts are present.
	ExpertsOnDisk int  `json:"experts_on_disk"`
	ExpertsTotal  int  `json:"experts_total"`
	Downloading   bool `json:"downloading"`
	Paused        bool `json:"paused"`
	// Pending is the mode ("stream" or "full") of the download that runs
	// or is paused, "" when none.
	Pending     string   `json:"pending"`
	Download    Progress `json:"download"`
	WarmEnabled bool     `json:"warm_enabled"`
	Warming     bool     `json:"warming"`
	Warm        Progress `json:"warm"`
	WarmNote    string   `json:"warm_note"`
	// What the buttons may do now (the menu's enabled entries).
	CanDownload, CanPause, CanResume, CanUpgrade, CanWarm bool
	// DownloadNote says why Download is not offered, and what to do
	// instead, when nothing is installed and it is not ("" otherwise).
	DownloadNote string `json:"download_note"`
}

// Progress is a download's or warming's bytes and rate.
type Progress struct {
	Done  int64   `json:"done"`
	Total int64   `json:"total"`
	Rate  float64 `json:"rate"` // bytes per second, measured; 0 until measured
	// ETASeconds is the time left at the measured rate, 0 while unknown.
	ETASeconds float64 `json:"eta_seconds"`
	// Waiting says why the download waits ("waiting for the hub (rate
	// limited), retrying in 30 s"), "" when it does not.
	Waiting string `json:"waiting,omitempty"`
}

// Settings are the app's settings the page edits.
type Settings struct {
	Port               int      `json:"port"`
	APIKey             string   `json:"api_key"`
	CORSOrigins        []string `json:"cors_origins"`
	Queue              int      `json:"queue"`
	WarmOvernight      bool     `json:"warm_overnight"`
	WarmIdleMinutes    float64  `json:"warm_idle_minutes"`
	NotifyAfterSeconds float64  `json:"notify_after_seconds"`
}

// Flag is one setting deltafin serve runs with, as /settings lists it:
// serve takes its settings from its flags, so the page shows them and
// changes none. A secret is never a Value (the API key reads "set").
type Flag struct{ Name, Value string }
