package telegram

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/platform"
)

func BenchmarkUpdateToEvents(b *testing.B) {
	var u tgbotapi.Update
	if err := json.Unmarshal([]byte(`{"update_id":11,"message":{"message_id":4,"from":`+annJSON+`,"chat":`+groupJSON+`,"date":1772362800,"text":"/start@herald_bot now please"}}`), &u); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if evs := updateToEvents(&u, "herald_bot", testNow); len(evs) != 1 {
			b.Fatal(evs)
		}
	}
}

func BenchmarkSplitText(b *testing.B) {
	text := strings.Repeat("строка с текстом 😀 and some words\n", 400) // ~14k units
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if parts := splitText(text, maxTextUnits, platform.ParsePlain); len(parts) < 3 {
			b.Fatal(len(parts))
		}
	}
}

func BenchmarkSplitTextHTML(b *testing.B) {
	text := strings.Repeat("<b>строка</b> с <i>текстом</i> 😀 &amp; <a href=\"https://e.x/\">words</a>\n", 250) // ~14k units
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if parts := splitText(text, maxTextUnits, platform.ParseHTML); len(parts) < 3 {
			b.Fatal(len(parts))
		}
	}
}

// BenchmarkSend is one sendMessage through the adapter to the fake server
// over loopback HTTP, from many goroutines to many chats.
func BenchmarkSend(b *testing.B) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint()})
	if err != nil {
		b.Fatal(err)
	}
	var chat atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		target := strconv.FormatInt(chat.Add(1), 10)
		for pb.Next() {
			if _, err := a.Send(context.Background(), sendTo(target, platform.TextMessage("hello"))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPollDelivery measures updates per second through Run's poll
// loop: b.N updates wait on the fake server, and the clock runs until the
// last is handed to handle.
func BenchmarkPollDelivery(b *testing.B) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint()})
	if err != nil {
		b.Fatal(err)
	}
	for i := range b.N {
		srv.SendUserMessage(int64(1+i%50), ann, "m")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var n atomic.Int64
	all := make(chan struct{})
	done := make(chan error, 1)
	b.ResetTimer()
	go func() {
		done <- a.Run(ctx, func(platform.Event) {
			if n.Add(1) == int64(b.N) {
				close(all)
			}
		})
	}()
	select {
	case <-all:
	case err := <-done:
		b.Fatalf("Run = %v after %d updates", err, n.Load())
	}
	b.StopTimer()
	cancel()
	<-done
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
}
