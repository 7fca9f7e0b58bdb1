package onebot

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string // "" means valid
	}{
		{"zero value", Config{}, ""},
		{"reverse listen", Config{Listen: ":6701", AccessToken: "t"}, ""},
		{"forward", Config{Mode: Forward, URL: "ws://127.0.0.1:6700/"}, ""},
		{"forward wss", Config{Mode: Forward, URL: "wss://bot.example/onebot"}, ""},
		{"unknown mode", Config{Mode: 7}, "Mode"},
		{"reverse with URL", Config{URL: "ws://x/"}, "URL"},
		{"forward without URL", Config{Mode: Forward}, "URL"},
		{"forward with Listen", Config{Mode: Forward, URL: "ws://x/", Listen: ":1"}, "Listen"},
		{"forward http scheme", Config{Mode: Forward, URL: "http://x/"}, "URL"},
		{"forward no host", Config{Mode: Forward, URL: "ws:///path"}, "URL"},
		{"forward unparsable", Config{Mode: Forward, URL: "ws://[::1"}, "URL"},
		{"path", Config{Path: "ws"}, "Path"},
		{"action timeout", Config{ActionTimeout: -1}, "ActionTimeout"},
		{"reconnect negative", Config{ReconnectMax: -1}, "ReconnectMin/ReconnectMax"},
		{"reconnect order", Config{Mode: Forward, URL: "ws://x/", ReconnectMin: time.Minute, ReconnectMax: time.Second}, "ReconnectMin"},
		{"write timeout", Config{WriteTimeout: -time.Second}, "WriteTimeout"},
		{"read limit", Config{ReadLimit: -1}, "ReadLimit"},
		{"max connections", Config{MaxConnections: -1}, "MaxConnections"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.cfg)
			if tt.field == "" {
				if err != nil || a == nil {
					t.Fatalf("New = %v, %v", a, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), ": "+tt.field+": ") {
				t.Fatalf("New error = %v; want ErrInvalidConfig naming %s", err, tt.field)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Path != DefaultPath || c.ActionTimeout != DefaultActionTimeout || c.ReconnectMin != DefaultReconnectMin ||
		c.ReconnectMax != DefaultReconnectMax || c.PingInterval != DefaultPingInterval || c.WriteTimeout != DefaultWriteTimeout ||
		c.ReadLimit != DefaultReadLimit || c.MaxConnections != DefaultMaxConnections || c.Dialer == nil || c.Logger == nil {
		t.Fatalf("defaults = %+v", c)
	}
	// A small maximum alone pulls the default minimum down with it.
	c, err = Config{ReconnectMax: 100 * time.Millisecond}.withDefaults()
	if err != nil || c.ReconnectMin != 100*time.Millisecond {
		t.Fatalf("ReconnectMin = %v, %v", c.ReconnectMin, err)
	}
	// A large minimum alone pushes the default maximum up.
	c, err = Config{ReconnectMin: time.Minute}.withDefaults()
	if err != nil || c.ReconnectMax != time.Minute {
		t.Fatalf("ReconnectMax = %v, %v", c.ReconnectMax, err)
	}
	if Reverse.String() != "reverse" || Forward.String() != "forward" || Mode(9).String() != "Mode(9)" {
		t.Fatal("Mode.String")
	}
}
