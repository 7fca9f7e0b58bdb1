package onebot

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
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
		{"named", Config{Name: "qq-2.main_1"}, ""},
		{"name with a colon", Config{Name: "qq:1"}, "Name"},
		{"name with a space", Config{Name: "qq 1"}, "Name"},
		{"name too long", Config{Name: strings.Repeat("q", 65)}, "Name"},
		{"own limits", Config{Limits: platform.Limits{PerSecond: 5, Burst: 5}}, ""},
		{"negative rate", Config{Limits: platform.Limits{PerSecond: -1}}, "Limits"},
		{"negative group burst", Config{Limits: platform.Limits{PerGroupPerSecond: 1, PerGroupBurst: -3}}, "Limits"},
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
		c.ReadLimit != DefaultReadLimit || c.MaxConnections != DefaultMaxConnections || c.Dialer == nil || c.Logger == nil ||
		c.Name != DefaultName || c.Limits != DefaultLimits() {
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

// TestNameAndLimits checks what Config.Name and Config.Limits become: the
// adapter's name, its events' Platform, and the budget it publishes, QQ's
// conservative default unless configured.
func TestNameAndLimits(t *testing.T) {
	def := DefaultLimits()
	if def.PerSecond <= 0 || def.PerSecond > 1 || def.PerGroupPerSecond <= 0 || def.PerGroupPerSecond > def.PerChatPerSecond ||
		def.Burst < 1 || def.PerChatBurst < 1 || def.PerGroupBurst < 1 {
		t.Fatalf("DefaultLimits = %+v; want at most one message a second overall, groups slower than chats, bursts of at least one", def)
	}
	// A bucket lets its burst and a minute's refill through in a minute.
	if most := float64(def.PerGroupBurst) + 60*def.PerGroupPerSecond; most > 20+1e-9 {
		t.Errorf("DefaultLimits lets %.2f messages to a group through in a minute; want at most 20", most)
	}
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != "onebot" || a.Limits() != def {
		t.Errorf("default adapter: Name %q, Limits %+v; want onebot and DefaultLimits", a.Name(), a.Limits())
	}
	own := platform.Limits{PerSecond: 2, Burst: 4, PerGroupPerSecond: 0.5, PerGroupBurst: 2}
	h := startAdapter(t, Config{Name: "qq-2", Limits: own})
	if h.a.Name() != "qq-2" || h.a.Limits() != own {
		t.Errorf("configured adapter: Name %q, Limits %+v; want qq-2 and %+v", h.a.Name(), h.a.Limits(), own)
	}
	p := h.connect(h.reverseServer(), 10001)
	p.sendJSON(privateMsg(10001, 42, 1, "hi"))
	if ev := h.event(); ev.Platform != "qq-2" || ev.Text != "hi" {
		t.Errorf("event %+v; want the text hi from platform qq-2", ev)
	}
}
