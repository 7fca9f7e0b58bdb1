package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/engine"
)

// replayDeadLetters loads the dead letters a previous run saved in path,
// if any, and sends them again through e: replies users are still owed.
// Those that fail again become dead letters once more, and are saved at
// exit.
func replayDeadLetters(ctx context.Context, e *engine.Engine, path string, log *zap.Logger) error {
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
	sent, err := e.ReplayDeadLetters(ctx)
	log.Info("replaying the replies a previous run could not deliver",
		zap.String("file", path), zap.Int("loaded", n), zap.Int("queued", sent), zap.Error(err))
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
