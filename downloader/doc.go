// Package downloader is the start of the data flow (downloader → disk →
// engine → kernels → tokens → server/app): it mirrors the model's Hugging
// Face repository into the data directory and serves missing bytes to the
// engine on demand.
//
// Layout of a mirror (Options.Dir, one per repository and revision):
//
//	config.json, tiktoken.model, ...      metadata, fetched whole and verified
//	model-00001-of-000096.safetensors     sparse shards at their original offsets
//	.deltafin/manifest.json               the hub listing (sizes, sha256, git ids)
//	.deltafin/presence/<file>.json        byte ranges on disk, per file
//	.deltafin/lock                        flock: one process per mirror
//
// A range enters a presence map only after its bytes are written and the
// shard fsynced, every Options.CommitEvery bytes (8 MiB) or CommitInterval
// (2 s) of a transfer, and maps are replaced atomically, so a crash, kill -9
// or full disk loses less than CommitEvery bytes (on a slow link, seconds)
// per transfer in flight. Stream mode holds metadata and the
// spine (shard headers and every tensor that is not a routed expert);
// full mode holds every byte; Mirror.Ensure (and a Source's Ensure and
// ReadAt, the engine's door to a mirrored shard) fetches any missing range
// with one HTTP range request, coalescing concurrent callers. The shard
// layout (which tensors are routed experts) comes from package checkpoint.
// Complete files are checked against the hub's sha256 (git blob id for
// small files); a mismatch fetches the file again and never accepts it.
// The bytes of a file held in part (a stream install's shards) are checked
// against the file's Xet hash (xetverify.go, package xet), by Fetch and,
// for the ranges a Source fetches for the engine, before the engine sees
// them: a range that fails is fetched again once, then ErrDamaged (unless
// the hub sent the same bytes twice: a verifier disagreement, reported
// through Options.Disagreement, the bytes left unverified); where
// the hub has no Xet
// for a file, its bytes are present but not verified until it is complete,
// and Coverage says so ("100% present, 0% verified"). Bytes on disk that
// are not verified are the install's state "unverified" (state.go): the
// engine's reads refuse them with ErrUnverified unless
// Options.AllowUnverified. A complete file whose mtime moved since it was
// verified is hashed again. Folder (folder.go) reads a mirror folder's
// presence maps without a Mirror, refusing a missing range (ErrMissing). A shard header that does not parse, or
// whose layout is wrong, is marked missing and fetched again once; then
// ErrDamaged names the file and suggests `deltafin setup --repair`
// (Repair: hash complete files again, fetch headers again). A ReadOnly
// mirror, for dry runs, creates and writes nothing.
//
// The hub API used: GET {endpoint}/api/models/{repo}/tree/{revision}?recursive=true
// (Link-paginated), and GET {endpoint}/{repo}/resolve/{revision}/{path} with
// a Range header, which large files answer with a redirect to a CDN whose
// signed URL is reused until it expires. The token goes to the hub only.
// Xet (xethub.go): HEAD of the resolve URL for X-Xet-Hash, the token
// exchange GET {endpoint}/api/models/{repo}/xet-read-token/{revision}, and
// GET {casUrl}/v2/file-chunk-hashes/{hash} with X-Range-Dirty and the CAS
// token, which goes to the CAS only.
// Errors: 401/403/404 are permanent and explained (ErrAuth, ErrNotFound);
// a name that does not resolve or a refused connection, before the hub has
// ever answered, is ErrUnreachable at once (unreachable.go);
// timeouts, stalls, 5xx, 429 and dropped connections are retried, resuming
// at the last byte written: after the Retry-After the hub names (seconds or
// an HTTP date, on 429 and 503), else with exponential backoff and full
// jitter, within a budget of time without progress (Options.RetryBudget, and
// the longer RateLimitBudget for 429s); a wait is a PhaseWaiting event. A
// full disk is ErrDiskFull.
package downloader
