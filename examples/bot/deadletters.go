package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// replayDeadLetters loads the dead letters a previous run saved in path,
// if any, and sends them again through e: replies users are still owed.
// Those that fail again become dead letters once more, and are saved at
// exit. A letter hold reports true for (a send that may have reached its
// platform, of an adapter that avoids duplicates) is not sent again: it
// stays a dead letter, for the operator to see (GET /deadletters) and
// replay if they will, and is saved again at exit.
func replayDeadLetters(ctx context.Context, e *engine.Engine, path string, log *zap.Logger, hold func(sender.DeadLetter) bool) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("DEAD_LETTERS_FILE: %w", err)
	}
	defer f.Close()
	n, err := e.DeadLetterStore().Load(f)
	if err != nil {
		return fmt.Errorf("DEAD_LETTERS_FILE %s: %w", path, err)
	}
	if n == 0 {
		return nil
	}
	store := e.DeadLetterStore()
	var held []sender.DeadLetter
	for _, dl := range store.Drain() {
		if hold(dl) {
			held = append(held, dl)
		} else {
			store.Add(dl)
		}
	}
	sent, err := e.ReplayDeadLetters(ctx)
	for _, dl := range held {
		store.Add(dl)
	}
	log.Info("replaying the replies a previous run could not deliver",
		zap.String("file", path), zap.Int("loaded", n), zap.Int("queued", sent),
		zap.Int("held", len(held)), zap.Error(err)) // held: they may have arrived
	return nil
}

// saveDeadLetters writes e's dead letters to path, replacing it in one
// step (a crash mid-write leaves the old file).
func saveDeadLetters(e *engine.Engine, path string, log *zap.Logger) error {
	store := e.DeadLetterStore()
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("DEAD_LETTERS_FILE: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	if err := errors.Join(store.Save(tmp), tmp.Close()); err != nil {
		return fmt.Errorf("DEAD_LETTERS_FILE: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("DEAD_LETTERS_FILE: %w", err)
	}
	if n := store.Len(); n > 0 {
		log.Info("saved the replies that could not be delivered, for the next start", zap.String("file", path), zap.Int("dead_letters", n))
	}
	return nil
}

// deadLetterRoutes adds the operator's view of e's dead letters to mux,
// beside /metrics (METRICS_ADDR): GET /deadletters lists them, oldest
// first, as JSON — each message cut to 32 characters, as the logs cut it,
// and whether it may have been delivered already —, and POST /deadletters/replay sends them again (e.ReplayDeadLetters),
// answering how many were queued (refused when it comes from a page of
// another site). A replay that fails again is kept again.
//
// Both answer only a request whose Host is an IP address, localhost or
// host (METRICS_ADDR's host): a page whose domain an attacker points at
// the bot's address (DNS rebinding) reads and replays nothing.
func deadLetterRoutes(mux *http.ServeMux, e *engine.Engine, host string) {
	local := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name := r.Host
			if hostOnly, _, err := net.SplitHostPort(r.Host); err == nil {
				name = hostOnly
			}
			name = strings.Trim(name, "[]")
			if net.ParseIP(name) == nil && !strings.EqualFold(name, "localhost") && (host == "" || !strings.EqualFold(name, host)) {
				http.Error(w, "misdirected request", http.StatusMisdirectedRequest)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	type letter struct {
		ID        string `json:"id"`
		Platform  string `json:"platform"`
		Chat      string `json:"chat"`
		Text      string `json:"text,omitempty"`
		Files     int    `json:"files,omitempty"`
		Attempts  int    `json:"attempts"`
		Error     string `json:"error"`
		Permanent bool   `json:"permanent"`
		// MaybeDelivered: the request may have reached the platform (a
		// reset or a timeout after it was written): a replay may send it
		// twice.
		MaybeDelivered bool      `json:"maybe_delivered"`
		At             time.Time `json:"at"`
	}
	mux.Handle("GET /deadletters", local(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dls := e.DeadLetters()
		out := struct {
			DeadLetters []letter `json:"dead_letters"`
			Dropped     uint64   `json:"dropped"`
		}{DeadLetters: make([]letter, 0, len(dls)), Dropped: e.DeadLetterStore().Dropped()}
		for _, dl := range dls {
			l := letter{ID: dl.ID, Platform: dl.Request.Platform, Chat: dl.Request.Target.ID, Text: sender.TextPrefix(dl.Request.Message.Text),
				Files: len(dl.Request.Message.Attachments), Attempts: dl.Attempts, At: dl.At, Permanent: platform.IsPermanent(dl.Err),
				MaybeDelivered: errors.Is(dl.Err, platform.ErrMaybeDelivered)}
			if dl.Err != nil {
				l.Error = dl.Err.Error()
			}
			out.DeadLetters = append(out.DeadLetters, l)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})))
	// A page the operator's browser opens elsewhere cannot make it replay
	// (a cross-site POST needs no preflight).
	var csrf http.CrossOriginProtection
	mux.Handle("POST /deadletters/replay", local(csrf.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := e.ReplayDeadLetters(r.Context())
		out := struct {
			Queued int    `json:"queued"`
			Error  string `json:"error,omitempty"`
		}{Queued: n}
		if err != nil {
			out.Error = err.Error()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))))
}
