package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/internal/natstest"
	"github.com/heraldbot/herald/internal/testmain"
)

// The end-to-end tests build the example bot and run the binary as a
// subprocess, as an operator would.

var (
	buildOnce sync.Once
	botPath   string
	buildErr  error
)

func botBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "herald-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		botPath = filepath.Join(dir, "bot")
		// The bot's processes run without the race detector unless
		// HERALD_E2E_RACE is set: the packages' own tests run with it,
		// and a race build of each of a test's several processes would
		// take the CPU the tests' timing bounds count on.
		args := []string{"build", "-o", botPath, "."}
		if os.Getenv("HERALD_E2E_RACE") != "" {
			args = []string{"build", "-race", "-o", botPath, "."}
		}
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return botPath
}

// e2eParallel is how many end-to-end tests run at once unless -parallel
// says (see queue): they spend most of their time waiting (for takeovers,
// for Telegram's budget), not computing, so more than the processors.
// Eight at once take the package alone from 41 s (six) to 34 s on 2 cores,
// the same CPU. Ten took it to 35 s, but on a loaded machine (the package
// three times beside the cluster and browser tests) the tests bound by
// real time failed: a paused gateway's send landing late, a NATS server's
// store freed before the test gave the room back.
const e2eParallel = 8

func TestMain(m *testing.M) {
	queue.SetUp(e2eParallel)
	code := m.Run()
	natstest.Cleanup()
	if botPath != "" {
		os.RemoveAll(filepath.Dir(botPath))
	}
	testmain.Exit(code)
}

// botProcess is a running bot binary.
type botProcess struct {
	cmd    *exec.Cmd
	stdout *lineBuffer
	stderr *lineBuffer
	done   chan struct{}
	err    error
}

// lineBuffer collects a stream and lets a test wait for a line.
type lineBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	added chan struct{}
}

func newLineBuffer() *lineBuffer { return &lineBuffer{added: make(chan struct{})} }

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	close(b.added)
	b.added = make(chan struct{})
	return len(p), nil
}

func (b *lineBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the stream matches re and returns the first match's
// submatches.
func (b *lineBuffer) waitFor(ctx context.Context, re *regexp.Regexp) ([]string, error) {
	for {
		b.mu.Lock()
		m := re.FindStringSubmatch(b.buf.String())
		ch := b.added
		b.mu.Unlock()
		if m != nil {
			return m, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s: %w", re, ctx.Err())
		}
	}
}

// botEnv returns the test's environment without the bot's own settings,
// which a developer's shell or a CI machine may hold (a real
// TELEGRAM_BOT_TOKEN, a METRICS_ADDR in use), followed by env: the bot
// sees only the settings the test gives it.
//
// Each bot process runs on one processor (GOMAXPROCS=1) unless the
// environment sets GOMAXPROCS: the tests run up to twenty processes at
// once, and a process's idle processors looking for work cost CPU the
// others need: with the NATS servers on one processor too (natstest), the
// package took 34–37 core-seconds against 37–40 on 2 cores, in the same
// wall time (6 December 2026, interleaved runs).
func botEnv(env ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "TELEGRAM_"), strings.HasPrefix(name, "ONEBOT_"), strings.HasPrefix(name, "WEBCHAT_"),
			name == "METRICS_ADDR", name == "LOG_FORMAT", name == "SHUTDOWN_TIMEOUT", name == "DEAD_LETTERS_FILE",
			strings.HasPrefix(name, "DATA_"), name == "NATS_URL", name == "XDG_STATE_HOME", strings.HasPrefix(name, "HERALD_"):
			continue
		}
		out = append(out, kv)
	}
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		out = append(out, "GOMAXPROCS=1")
	}
	if _, set := os.LookupEnv("GOTRACEBACK"); !set {
		out = append(out, "GOTRACEBACK=all") // a stuck bot's SIGQUIT (startBot) prints every goroutine
	}
	return append(out, env...)
}

// startBot starts the bot binary with env; its journal is in a directory
// of the test's own unless env sets DATA_DIR or NATS_URL.
func startBot(t *testing.T, env ...string) *botProcess {
	t.Helper()
	p, err := launchBot(t, env...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// launchBot is startBot returning its error instead of failing the test,
// for a goroutine of the test's (see supervise), whose env must then set
// DATA_DIR or NATS_URL (a temporary directory is made by the test) and
// whose bot binary was built already.
func launchBot(t *testing.T, env ...string) (*botProcess, error) {
	t.Helper()
	cmd := exec.Command(botBinary(t))
	if !slices.ContainsFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "DATA_DIR=") || strings.HasPrefix(kv, "NATS_URL=")
	}) {
		env = append(env, "DATA_DIR="+t.TempDir())
	}
	cmd.Env = botEnv(env...)
	p := &botProcess{cmd: cmd, stdout: newLineBuffer(), stderr: newLineBuffer(), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			if t.Failed() {
				// A bot still running when its test failed may be stuck:
				// SIGQUIT has it print every goroutine's stack (see botEnv)
				// to the stderr logged below.
				_ = cmd.Process.Signal(syscall.SIGQUIT)
				select {
				case <-p.done:
				case <-time.After(5 * time.Second):
				}
			}
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("bot stderr:\n%s", p.stderr.String())
		}
	})
	return p, nil
}

// stop sends SIGTERM and returns the exit code.
func (p *botProcess) stop(t *testing.T, timeout time.Duration) int {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return p.wait(t, timeout)
}

func (p *botProcess) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("bot did not exit within %v", timeout)
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		return exit.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

func texts(ms []telegramtest.SentMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Text
	}
	return out
}

// TestE2ETelegram runs the bot against the fake Bot API: many chats each
// send /ping, /echo and /count 5, with a flood wait (429) on one chat and a
// 500 on another; every reply arrives exactly once and in order. Then, with
// replies still queued, SIGTERM: all of them are delivered before the bot
// exits with code 0.
func TestE2ETelegram(t *testing.T) {
	runParallel(t, 13*time.Second)
	srv := telegramtest.NewServer()
	defer srv.Close()
	p := startBot(t,
		"TELEGRAM_BOT_TOKEN=123456:e2e-secret-token",
		"TELEGRAM_API_ENDPOINT="+srv.Endpoint(),
		"WEBCHAT_ADDR=off",
		"LOG_FORMAT=json",
		"SHUTDOWN_TIMEOUT=60s",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	const chats = 12
	const flooded, failing = 1001, 1002
	floodStart := time.Now()
	srv.FloodWait(flooded, 2*time.Second)
	srv.Inject(telegramtest.Fault{Method: "sendMessage", ChatID: failing, Times: 1, Status: 500, Description: "Internal Server Error"})

	for c := range chats {
		id := int64(1000 + c)
		from := tgbotapi.User{ID: id, FirstName: fmt.Sprint("User", c)}
		srv.SendUserMessage(id, from, "/ping")
		srv.SendUserMessage(id, from, fmt.Sprintf("/echo hello %d", c))
		srv.SendUserMessage(id, from, "/count 5")
	}
	for c := range chats {
		id := int64(1000 + c)
		sent, err := srv.WaitSent(ctx, id, 7)
		if err != nil {
			t.Fatalf("chat %d: %v (got %q)", id, err, texts(sent))
		}
		got := texts(sent)
		want := []string{fmt.Sprintf("hello %d", c), "1", "2", "3", "4", "5"}
		if len(got) != 7 || !strings.HasPrefix(got[0], "pong") || !slices.Equal(got[1:], want) {
			t.Fatalf("chat %d got %q; want pong, %q", id, got, want)
		}
	}
	if first := srv.Sent(flooded)[0].At; first.Before(floodStart.Add(2 * time.Second)) {
		t.Fatalf("chat %d got a message %v after the flood wait began; want at least 2s", flooded, first.Sub(floodStart))
	}

	// SIGTERM with replies queued: rate limits (1/s per chat) keep most of
	// them waiting when the signal arrives.
	const burst = 10
	for c := range 5 {
		id := int64(2000 + c)
		srv.SendUserMessage(id, tgbotapi.User{ID: id, FirstName: "Late"}, fmt.Sprintf("/count %d", burst))
	}
	// Every /count must have reached the bot before the signal (the last
	// poll may still be on its way): wait for each chat's first reply.
	for c := range 5 {
		if _, err := srv.WaitSent(ctx, int64(2000+c), 1); err != nil {
			t.Fatal(err)
		}
	}
	if code := p.stop(t, 80*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; want 0", code)
	}
	for c := range 5 {
		id := int64(2000 + c)
		want := make([]string, burst)
		for i := range want {
			want[i] = fmt.Sprint(i + 1)
		}
		if got := texts(srv.Sent(id)); !slices.Equal(got, want) {
			t.Fatalf("chat %d after SIGTERM got %q; want %q", id, got, want)
		}
	}
	// Exactly once: nothing more than expected reached any chat.
	for c := range chats {
		if n := len(srv.Sent(int64(1000 + c))); n != 7 {
			t.Fatalf("chat %d got %d messages; want 7", 1000+c, n)
		}
	}
	if strings.Contains(p.stderr.String(), "e2e-secret-token") {
		t.Fatal("the bot logged its token")
	}
	if !strings.Contains(p.stderr.String(), "stopped cleanly") {
		t.Fatalf("no clean-stop line in the log")
	}
}

// webchatFrame is the part of the browser chat's server frames the test
// reads.
type webchatFrame struct {
	Type    string `json:"type"`
	Message struct {
		ID      string `json:"id"`
		Text    string `json:"text"`
		Bot     bool   `json:"bot"`
		Buttons [][]struct {
			Text string `json:"text"`
			Data string `json:"data"`
		} `json:"buttons"`
	} `json:"message"`
	Messages []struct {
		Text string `json:"text"`
		Bot  bool   `json:"bot"`
	} `json:"messages"`
	Chat struct {
		ID string `json:"id"`
	} `json:"chat"`
}

// TestE2EWebchat runs the bot with its default adapter on a free port and
// talks to it over the page's WebSocket.
func TestE2EWebchat(t *testing.T) {
	runParallel(t, 3*time.Second)
	p := startBot(t, "WEBCHAT_ADDR=127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m, err := p.stdout.waitFor(ctx, regexp.MustCompile(`open (http://127\.0\.0\.1:\d+/) in your browser`))
	if err != nil {
		t.Fatalf("%v\nstdout: %q", err, p.stdout.String())
	}
	pageURL := m[1]
	if strings.Count(p.stdout.String(), "\n") != 1 {
		t.Fatalf("stdout should be one line, got %q", p.stdout.String())
	}
	resp, err := http.Get(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(page, []byte("<html")) {
		t.Fatalf("page: %d %q", resp.StatusCode, page[:min(len(page), 200)])
	}

	wsURL := "ws" + strings.TrimPrefix(pageURL, "http") + "ws"
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, wsURL, http.Header{"Origin": {strings.TrimSuffix(pageURL, "/")}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(conn.WriteJSON(map[string]string{"type": "hello", "name": "E2E"}))
	var hello webchatFrame
	must(conn.ReadJSON(&hello))
	if hello.Type != "history" || hello.Chat.ID == "" {
		t.Fatalf("first frame = %+v", hello)
	}
	for _, text := range []string{"/ping", "/echo über 世界", "/count 5"} {
		must(conn.WriteJSON(map[string]string{"type": "message", "text": text}))
	}
	var got []string
	must(conn.SetReadDeadline(time.Now().Add(30 * time.Second)))
	for len(got) < 7 {
		var f webchatFrame
		must(conn.ReadJSON(&f))
		if f.Type == "message" && f.Message.Bot {
			got = append(got, f.Message.Text)
		}
	}
	if !strings.HasPrefix(got[0], "pong") || !slices.Equal(got[1:], []string{"über 世界", "1", "2", "3", "4", "5"}) {
		t.Fatalf("replies = %q", got)
	}

	// /menu shows buttons; pressing one edits the menu in place.
	must(conn.WriteJSON(map[string]string{"type": "message", "text": "/menu"}))
	var menuFrame webchatFrame
	for menuFrame.Type != "message" || !menuFrame.Message.Bot {
		menuFrame = webchatFrame{}
		must(conn.ReadJSON(&menuFrame))
	}
	if len(menuFrame.Message.Buttons) != 1 || len(menuFrame.Message.Buttons[0]) != 3 {
		t.Fatalf("/menu → %+v; want a row of three buttons", menuFrame.Message)
	}
	coffee := menuFrame.Message.Buttons[0][1]
	must(conn.WriteJSON(map[string]string{"type": "callback", "data": coffee.Data, "message_id": menuFrame.Message.ID}))
	var edit webchatFrame
	for edit.Type != "edit" {
		edit = webchatFrame{}
		must(conn.ReadJSON(&edit))
		if edit.Type == "message" && edit.Message.Bot {
			t.Fatalf("a new message %q instead of an edit of the menu", edit.Message.Text)
		}
	}
	if edit.Message.ID != menuFrame.Message.ID || edit.Message.Text != "You picked coffee." {
		t.Fatalf("edit frame %+v; want message %s to read %q", edit.Message, menuFrame.Message.ID, "You picked coffee.")
	}
	got = append(got, edit.Message.Text)

	// /greet asks, and the next message is the answer, not a command.
	readBot := func() string {
		t.Helper()
		for {
			var f webchatFrame
			must(conn.ReadJSON(&f))
			if f.Type == "message" && f.Message.Bot {
				return f.Message.Text
			}
		}
	}
	must(conn.WriteJSON(map[string]string{"type": "message", "text": "/greet"}))
	if q := readBot(); q != "What is your name?" {
		t.Fatalf("/greet asked %q", q)
	}
	must(conn.WriteJSON(map[string]string{"type": "message", "text": "/ping"}))
	if a := readBot(); a != "That does not look like a name; try /greet again." {
		t.Fatalf("/greet answered %q to a command given as the name", a)
	}
	got = append(got, "What is your name?", "That does not look like a name; try /greet again.")

	// A second connection to the same chat sees the history.
	conn2, _, err := websocket.DefaultDialer.DialContext(ctx, wsURL, http.Header{"Origin": {strings.TrimSuffix(pageURL, "/")}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	must(conn2.WriteJSON(map[string]string{"type": "hello", "chat_id": hello.Chat.ID}))
	var hist webchatFrame
	must(conn2.ReadJSON(&hist))
	var botTexts []string
	for _, m := range hist.Messages {
		if m.Bot {
			botTexts = append(botTexts, m.Text)
		}
	}
	if !slices.Equal(botTexts, got) {
		t.Fatalf("history = %q; want %q", botTexts, got)
	}

	if code := p.stop(t, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d; want 0", code)
	}
}

// TestE2EBadConfig: each bad setting stops the built binary with exit code
// 2 and one line naming it.
func TestE2EBadConfig(t *testing.T) {
	runParallel(t, 2*time.Second)
	for _, tc := range badConfigs {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{}
			for i := 0; i+1 < len(tc.env); i += 2 {
				env = append(env, tc.env[i]+"="+tc.env[i+1])
			}
			cmd := exec.Command(botBinary(t), tc.args...)
			cmd.Env = botEnv(env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("err = %v; want exit code 2 (stderr %q)", err, stderr.String())
			}
			sc := bufio.NewScanner(&stderr)
			var lines []string
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			if len(lines) != 1 || !strings.Contains(lines[0], tc.setting) {
				t.Fatalf("stderr = %q; want one line naming %s", lines, tc.setting)
			}
		})
	}
}

// TestE2EDeadLettersSurviveRestart: a reply Telegram refuses (the user
// blocked the bot) is a dead letter, saved to DEAD_LETTERS_FILE at exit;
// the next start replays it, and once delivered the file is empty.
func TestE2EDeadLettersSurviveRestart(t *testing.T) {
	runParallel(t, 2*time.Second)
	srv := telegramtest.NewServer()
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "dead-letters.jsonl")
	env := []string{
		"TELEGRAM_BOT_TOKEN=123456:e2e-secret-token",
		"TELEGRAM_API_ENDPOINT=" + srv.Endpoint(),
		"WEBCHAT_ADDR=off",
		"LOG_FORMAT=json",
		"DEAD_LETTERS_FILE=" + file,
		"DATA_DIR=off",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const chat = 3001
	unblock := srv.Block(chat)
	p := startBot(t, env...)
	srv.SendUserMessage(chat, tgbotapi.User{ID: chat, FirstName: "Ann"}, "/echo kept for later")
	if err := srv.WaitUntil(ctx, func() bool { return srv.Requests("sendMessage") >= 1 }); err != nil {
		t.Fatal(err)
	}
	if code := p.stop(t, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d; want 0", code)
	}
	saved, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(saved, []byte("\n")); n != 1 || !bytes.Contains(saved, []byte("kept for later")) {
		t.Fatalf("dead-letter file holds %d lines: %s; want the refused reply", n, saved)
	}
	if bytes.Contains(saved, []byte("e2e-secret-token")) {
		t.Fatal("the dead-letter file holds the token")
	}

	unblock()
	p = startBot(t, env...)
	sent, err := srv.WaitSent(ctx, chat, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].Text != "kept for later" {
		t.Fatalf("replayed %q", sent[0].Text)
	}
	if code := p.stop(t, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d; want 0", code)
	}
	if saved, err := os.ReadFile(file); err != nil || len(saved) != 0 {
		t.Fatalf("dead-letter file after the replay: %q, %v; want it empty", saved, err)
	}
	if n := len(srv.Sent(chat)); n != 1 {
		t.Fatalf("%d messages reached the chat; want the reply once", n)
	}
}
