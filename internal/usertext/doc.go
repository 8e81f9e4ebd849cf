// Package usertext turns an error into the text a person reads: without
// the Go package names (app:, downloader:, engine: …) that the packages
// prefix their errors with for the log. Every edge where an error reaches
// a user goes through it: the command line's last line, the menu and its
// notifications (app.UserText), the API's and the page's error bodies
// (server, web).
package usertext
