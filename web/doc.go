// Package web is Deltafin's window: a local page served by the API server
// on the same port (Server.Mount), to ask and to read answers that take
// hours (/), to watch the model at work (/model) and to change the settings
// (/settings: the app's, or under deltafin serve the flags in force, read
// only, Options.Flags). It sits beside the server in the data flow (tokens → server
// → web): an answer is a background response of the server's own Responses
// API, so a reload, a closed tab or a quit loses nothing, and the page picks
// the stream up again with starting_after. Conversations live in the job
// store (store.Conversation), in the same file as the jobs.
//
// Everything the page needs is embedded (go:embed): html/template pages,
// one stylesheet and a few plain JavaScript files written here, Markdown
// rendering included (assets/md.js escapes every character before it adds
// markup). No external resource, no build step.
//
// Safety (guard.go): the server's Host check, as for the API; with an API
// key, the page asks for it once and keeps an HttpOnly SameSite=Strict
// cookie standing for it; every state-changing request needs the page's
// token in a header and a same-origin Origin/Sec-Fetch-Site; a strict
// Content-Security-Policy (default-src 'self', no inline script or style).
package web
