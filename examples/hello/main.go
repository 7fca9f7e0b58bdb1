// Command hello is the first bot of the README: one command on the local
// browser chat. Run it with `go run ./examples/hello` and open the URL it
// prints.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/core/engine"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

func run() error {
	log, err := zap.NewDevelopment(zap.AddStacktrace(zap.ErrorLevel)) // Herald logs nothing unless given a logger
	if err != nil {
		return err
	}
	chat, err := webchat.New(webchat.Config{Logger: log}) // logs where the chat is: http://127.0.0.1:8080/
	if err != nil {
		return err
	}
	e, err := engine.New(engine.WithAdapter(chat), engine.WithLogger(log))
	if err != nil {
		return err
	}

	e.OnCommand("hello", func(c *engine.Context) error {
		c.ReplyText("Hello, " + c.From().Name + "!") // queued at once, sent in order

		res, err := c.ReplyText("This one I wait for.").Wait(c.Context()) // the send's result
		if err != nil {
			return err // logged once, and given to the WithOnError hook
		}
		c.Logger().Info("delivered", zap.String("message_id", res.MessageID))
		return nil
	}, engine.Description("say hello"))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return e.Run(ctx) // until Ctrl-C; then sends every pending reply and returns
}
