// Package server is the OpenAI-compatible HTTP API on echo, at the end of
// the data flow: it renders requests with the K3 chat format, drives one
// engine.Session at a time and streams tokens back as server-sent events.
package server
