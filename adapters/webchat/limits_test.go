package webchat_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/webchat"
)

// TestIdleFloodDoesNotShutOutTabs holds three times the server's cap of
// connections open, idle after loading the page or never sending a
// request, and checks that the page still loads, a tab still connects,
// sends a message and gets the bot's reply, the server never holds more
// than its cap, and the idle connections are the ones it closed to make
// room.
func TestIdleFloodDoesNotShutOutTabs(t *testing.T) {
	// A WriteTimeout longer than the wait below: connections that never
	// send a request must be closed to make room, not for being slow.
	a, bot := start(t, webchat.Config{MaxConnections: 4, WriteTimeout: time.Minute})
	limit := webchat.ServerConnCap(a)
	flood := 3 * limit
	var (
		conns   []net.Conn
		closed  = make(chan struct{}, flood)
		readers sync.WaitGroup
	)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		readers.Wait()
	}()
	for i := range flood {
		c, err := net.Dial("tcp", a.Addr())
		if err != nil {
			t.Fatalf("flood connection %d: %v", i, err)
		}
		conns = append(conns, c)
		br := bufio.NewReader(c)
		if i%2 == 0 {
			// Load the page on a keep-alive connection, then stay idle.
			c.SetDeadline(time.Now().Add(ioTimeout))
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", a.Addr())
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("page on flood connection %d: %v", i, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			c.SetDeadline(time.Time{})
		}
		readers.Go(func() {
			io.Copy(io.Discard, br) // until the server closes it
			closed <- struct{}{}
		})
	}

	pageClient := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: ioTimeout}
	resp, err := pageClient.Get(a.URL())
	if err != nil {
		t.Fatalf("loading the page during the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("page during the flood: %s", resp.Status)
	}
	c := connect(t, a, hello{})
	c.say(t, "/ping")
	if got := texts(c.readMessages(t, 2)); !slices.Equal(got, []string{"user:/ping", "pong"}) {
		t.Fatalf("tab during the flood got %q; want the echo and pong", got)
	}
	bot.checkNoErrors(t)

	// The server accepted every connection in turn, the tab's last, so by
	// now it has closed all but limit-1 of the flood.
	deadline := time.After(ioTimeout / 2)
	for range flood - limit + 1 {
		select {
		case <-closed:
		case <-deadline:
			t.Fatalf("after %v, fewer than %d of %d idle connections closed; the server holds them", ioTimeout/2, flood-limit+1, flood)
		}
	}
	open, evicted := webchat.ServerConns(a)
	if open > limit || evicted < uint64(flood-limit+1) {
		t.Errorf("server holds %d connections (cap %d), evicted %d", open, limit, evicted)
	}
	c.say(t, "/ping")
	if got := texts(c.readMessages(t, 2)); !slices.Equal(got, []string{"user:/ping", "pong"}) {
		t.Fatalf("tab after the flood got %q", got)
	}
}
