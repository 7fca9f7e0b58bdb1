// Package docs_test checks the documentation a reader copies from: every
// Go snippet of README.md and docs/ builds and is gofmt-clean, and every
// link in them resolves.
package docs_test

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldbot/herald/internal/race"
)

// goBlock matches a fenced Go block of Markdown.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// prelude is what the snippets may use without declaring it: the imports
// a bot's file has, and the bot's own names they mention (a shop, a
// channel, the tokens a model generates).
const prelude = `package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/adapters/telegram"
	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
	"github.com/heraldbot/herald/plugins/count"
)

var (
	_ = context.Background
	_ = json.Unmarshal
	_ = errors.Is
	_ = fmt.Sprint
	_ = os.Getenv
	_ = signal.NotifyContext
	_ = strconv.Itoa
	_ = strings.HasPrefix
	_ = syscall.SIGINT
	_ = time.Second
	_ = zap.NewNop
	_ = memory.New
	_ = telegram.New
	_ = telegramtest.NewServer
	_ = webchat.New
	_ = cluster.Open
	_ = embedded.Start
	_ = engine.New
	_ = sender.Observe
	_ = platform.TextMessage
	_ = count.New
	_ testing.T
)

// The bot's own names the snippets mention.
var (
	channel    platform.Chat
	launchTime time.Time
	dataDir    string
	items      []string
	tokens     <-chan string
	sends      atomic.Int64
	shop       interface {
		Place(ctx context.Context, user string, items []string) (string, error)
	}
)

func digest() string                       { return "" }
func announce(ctx context.Context) error { return nil }
func register(e *engine.Engine)            {}

func main() {}
`

// TestReadmeSnippetsBuild builds every Go snippet of README.md and
// docs/*.md and runs go vet on them (which type-checks them without the
// link a build makes): one that
// declares a function as it is, the others as the body of a function
// given ctx, an engine e, a handler's Context c, a logger log and a
// Telegram adapter tg. Each must also be as gofmt writes it.
func TestReadmeSnippetsBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program: skipped with -short")
	}
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks [][][]byte
	for _, page := range append([]string{"../README.md"}, pages...) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, goBlock.FindAllSubmatch(text, -1)...)
	}
	if len(blocks) < 5 {
		t.Fatalf("found %d Go snippets; the pattern is wrong", len(blocks))
	}
	var src bytes.Buffer
	src.WriteString(prelude)
	for i, m := range blocks {
		snippet := string(m[1])
		checkFormatted(t, i, snippet)
		if strings.HasPrefix(snippet, "func ") {
			fmt.Fprintf(&src, "\n// snippet %d\n%s", i, snippet)
			continue
		}
		// In a block of its own, so that it may declare e or err anew.
		// A snippet that ends with a return ends the function (go vet
		// reports code after it as unreachable).
		end := "return nil\n"
		if lines := strings.Split(strings.TrimSpace(snippet), "\n"); strings.HasPrefix(strings.TrimSpace(lines[len(lines)-1]), "return ") {
			end = ""
		}
		fmt.Fprintf(&src, "\n// snippet %d\nfunc snippet%d(ctx context.Context, e *engine.Engine, c *engine.Context, log *zap.Logger, tg *telegram.Adapter) error {\n{\n%s\n}\n%s}\n", i, i, snippet, end)
	}
	dir, err := os.MkdirTemp("..", ".readme-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"vet", "./" + filepath.Base(dir)}
	if race.Enabled {
		// vet then reads the repository's packages as go test -race
		// ./... compiles them for its own tests, instead of compiling
		// them all once more without the race detector.
		args = []string{"vet", "-race", "./" + filepath.Base(dir)}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the snippets do not build or go vet finds fault with them: %v\n%s\n(numbered from 0 in order: README.md's, then docs/*.md's)", err, out)
	}
}

// checkFormatted fails the test if snippet i is not as gofmt writes it:
// declarations as they are, statements as the body of a function.
func checkFormatted(t *testing.T, i int, snippet string) {
	t.Helper()
	if strings.HasPrefix(snippet, "func ") || strings.HasPrefix(snippet, "var ") && !strings.Contains(snippet, "\ne.") {
		got, err := format.Source([]byte(snippet))
		if err != nil {
			t.Errorf("snippet %d does not parse: %v", i, err)
		} else if string(got) != snippet {
			t.Errorf("snippet %d is not gofmt-clean; gofmt writes it:\n%s", i, got)
		}
		return
	}
	var body strings.Builder
	for line := range strings.Lines(snippet) {
		if line != "\n" {
			body.WriteString("\t")
		}
		body.WriteString(line)
	}
	wrapped := "package p\n\nfunc f() {\n" + body.String() + "}\n"
	got, err := format.Source([]byte(wrapped))
	if err != nil {
		t.Errorf("snippet %d does not parse as statements: %v", i, err)
		return
	}
	if string(got) != wrapped {
		t.Errorf("snippet %d is not gofmt-clean; gofmt writes it:\n%s", i, got)
	}
}

// mdLink matches a Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinksResolve checks that every link of README.md and docs/*.md to a
// file of the repository names one that exists, and that every link to a
// heading (#anchor) names a heading of its page. Links to other sites are
// not fetched: the tests talk to no outside server.
func TestLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../README.md")
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllSubmatch(text, -1) {
			target := string(m[1])
			switch {
			case strings.HasPrefix(target, "http://"), strings.HasPrefix(target, "https://"), strings.HasPrefix(target, "mailto:"):
				continue
			case strings.HasPrefix(target, "#"):
				if !hasAnchor(text, target[1:]) {
					t.Errorf("%s: link %s names no heading of the page", page, target)
				}
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := filepath.Join(filepath.Dir(page), file)
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: %v", page, target, err)
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") {
				if linked, err := os.ReadFile(path); err == nil && !hasAnchor(linked, anchor) {
					t.Errorf("%s: link %s names no heading of %s", page, target, file)
				}
			}
		}
	}
}

// hasAnchor reports whether page has a heading whose GitHub anchor is
// anchor: lower case, spaces as hyphens, punctuation dropped.
func hasAnchor(page []byte, anchor string) bool {
	for line := range strings.Lines(string(page)) {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
				b.WriteRune(r)
			}
		}
		if b.String() == anchor {
			return true
		}
	}
	return false
}
