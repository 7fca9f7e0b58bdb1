package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/internal/natstest"
	"github.com/heraldbot/herald/internal/testport"
)

// The scale-out tests run the built bot as several processes of one bot
// on one NATS server (embedded in the test, listening on loopback) and a
// fake Bot API: the chats are shared by partition, one process is the
// gateway that polls and sends, and whatever dies or leaves, every reply
// arrives, in order per chat, within Telegram's limits.

// Telegram's limits, as the adapter publishes them.
const (
	tgPerSecond, tgBurst         = 30, 3
	tgPerChatSecond, tgChatBurst = 1, 3
)

// The rate checks look at windows of rateWindow: the sends past the burst
// in one window span at least the window less a slack, which is how much
// the fake Bot API may see sends bunched (the limiter paces the start of
// each request, the server stamps its arrival, and on a loaded machine a
// request can wait for its process to be scheduled). A doubled rate is
// still caught: 93 sends at 60/s span 1.55 s, under 3 s less 1 s; 7 sends
// to a chat at 2/s span 2 s, under 3 s less 0.5 s.
const (
	rateWindow          = 3 * time.Second
	botSlack, chatSlack = time.Second, 500 * time.Millisecond
)

// scaleEnv is the environment of the bot's processes in a scale-out test:
// Telegram (at its fake), JSON logs, NATS at url, and extra.
func scaleEnv(srv *telegramtest.Server, url string, extra ...string) []string {
	return append([]string{
		"TELEGRAM_BOT_TOKEN=" + crashToken,
		"TELEGRAM_API_ENDPOINT=" + srv.Endpoint(),
		"WEBCHAT_ADDR=off",
		"LOG_FORMAT=json",
		"SHUTDOWN_TIMEOUT=60s",
		"NATS_URL=" + url,
	}, extra...)
}

// startNATS starts a NATS server with JetStream on a loopback port, its
// store in a directory of the test's, and returns its URL.
func startNATS(t *testing.T) string {
	t.Helper()
	return natstest.Start(t, natstest.Options{}).URL()
}

// node is one process of the bot.
type node struct {
	name, metrics string
	p             *botProcess
}

func startNode(t *testing.T, name string, env []string) *node {
	t.Helper()
	n := &node{name: name, metrics: testport.Addr(t)}
	n.p = startBot(t, append(slices.Clone(env), "HERALD_NODE="+name, "METRICS_ADDR="+n.metrics)...)
	return n
}

// gauge sums a metric's samples on the node (-1 while they cannot be
// read).
func (n *node) gauge(name string) float64 {
	resp, err := http.Get("http://" + n.metrics + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return -1
		}
		sum += v
	}
	return sum
}

// waitSpread waits until the nodes own all the partitions between them,
// each some, and one of them is the gateway, which it returns.
func waitSpread(ctx context.Context, t *testing.T, nodes []*node) *node {
	t.Helper()
	for {
		total, gws := 0.0, []*node{}
		spread := true
		for _, n := range nodes {
			select {
			case <-n.p.done:
				t.Fatalf("%s exited (%v) before the partitions spread; its log:\n%s", n.name, n.p.err, n.p.stderr.String())
			default:
			}
			p := n.gauge("herald_cluster_partitions")
			spread = spread && p > 0
			total += p
			if n.gauge("herald_cluster_leading") == 1 {
				gws = append(gws, n)
			}
		}
		if spread && total == cluster.DefaultPartitions && len(gws) == 1 {
			return gws[0]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the partitions never spread over %d nodes (%v owned, %d gateways)", len(nodes), total, len(gws))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logTimes returns the times of the node's JSON log lines with msg.
func logTimes(n *node, msg string) []time.Time {
	var out []time.Time
	for _, line := range strings.Split(n.p.stderr.String(), "\n") {
		var l struct {
			TS  float64 `json:"ts"`
			Msg string  `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == msg {
			sec, frac := math.Modf(l.TS)
			out = append(out, time.Unix(int64(sec), int64(frac*1e9)))
		}
	}
	return out
}

// firstAfter returns how long after at the first of the nodes' log lines
// with msg came, or -1.
func firstAfter(at time.Time, msg string, nodes ...*node) time.Duration {
	d := time.Duration(-1)
	for _, n := range nodes {
		for _, ts := range logTimes(n, msg) {
			if ts.After(at) && (d < 0 || ts.Sub(at) < d) {
				d = ts.Sub(at)
			}
		}
	}
	return d
}

// waitFirstAfter waits until one of the nodes logged msg after at, and
// returns how long after at the first did (see firstAfter), or -1 if ctx
// ends first.
func waitFirstAfter(ctx context.Context, at time.Time, msg string, nodes ...*node) time.Duration {
	for {
		var changed []<-chan struct{}
		for _, n := range nodes {
			n.p.stderr.mu.Lock()
			changed = append(changed, n.p.stderr.added)
			n.p.stderr.mu.Unlock()
		}
		if d := firstAfter(at, msg, nodes...); d >= 0 {
			return d
		}
		cases := make([]reflect.SelectCase, 0, len(changed)+1)
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
		for _, ch := range changed {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
		}
		if i, _, _ := reflect.Select(cases); i == 0 {
			return -1
		}
	}
}

// lastAfter returns how long after at the last of the nodes' log lines
// with msg came, or -1.
func lastAfter(at time.Time, msg string, nodes ...*node) time.Duration {
	d := time.Duration(-1)
	for _, n := range nodes {
		for _, ts := range logTimes(n, msg) {
			if ts.After(at) && ts.Sub(at) > d {
				d = ts.Sub(at)
			}
		}
	}
	return d
}

// scaleRun is the load of a scale-out test: chats each sending
// /count n, spread over a time.
type scaleRun struct {
	srv          *telegramtest.Server
	chats, count int
	first        int64
}

func (r scaleRun) send(ctx context.Context, over time.Duration) {
	gap := over / time.Duration(r.chats)
	for c := range r.chats {
		id := r.first + int64(c)
		r.srv.SendUserMessage(id, tgbotapi.User{ID: id, FirstName: fmt.Sprint("User", c)}, fmt.Sprintf("/count %d", r.count))
		select {
		case <-time.After(gap):
		case <-ctx.Done():
			return
		}
	}
}

func (r scaleRun) total() int { return r.chats * r.count }

// wait waits until every chat has all its replies.
func (r scaleRun) wait(ctx context.Context, t *testing.T) {
	t.Helper()
	complete := func() bool {
		if r.srv.NumSent() < r.chats*r.count { // cheap, before the copies
			return false
		}
		for c := range r.chats {
			if len(dedup(texts(r.srv.Sent(r.first+int64(c))))) < r.count {
				return false
			}
		}
		return true
	}
	if err := r.srv.WaitUntil(ctx, complete); err != nil {
		for c := range r.chats {
			t.Logf("chat %d: %q", r.first+int64(c), texts(r.srv.Sent(r.first+int64(c))))
		}
		t.Fatalf("not every reply arrived: %v", err)
	}
}

// check checks each chat got 1..count in order, with at most maxRepeats
// replies sent twice, and that the sends kept within Telegram's limits;
// it returns the replies sent twice.
func (r scaleRun) check(t *testing.T, maxRepeats int) int {
	t.Helper()
	return r.checkRepeats(t, maxRepeats, false)
}

// checkRepeats is check; with late, a reply made again may come after
// later ones (a paused gateway's send in flight, which passed the fence
// before the pause, reaches the platform when it resumes, after the next
// gateway made it and went on): every reply once, in order, and at most
// maxRepeats copies of replies made before.
func (r scaleRun) checkRepeats(t *testing.T, maxRepeats int, late bool) int {
	t.Helper()
	want := make([]string, r.count)
	for i := range want {
		want[i] = strconv.Itoa(i + 1)
	}
	dups := 0
	for c := range r.chats {
		id := r.first + int64(c)
		sent := r.srv.Sent(id)
		got := texts(sent)
		if late {
			if !inOrderWithRepeats(got, r.count) {
				t.Fatalf("chat %d got %q; want 1 to %d in order (copies of earlier replies allowed)", id, got, r.count)
			}
		} else if d := dedup(got); !slices.Equal(d, want) {
			t.Fatalf("chat %d got %q; want %q in order (repeats of one reply allowed)", id, got, want)
		}
		if extra := len(got) - r.count; extra > maxRepeats {
			t.Fatalf("chat %d got %d replies twice: %q; want at most %d", id, extra, got, maxRepeats)
		} else {
			dups += extra
		}
		checkRate(t, fmt.Sprint("chat ", id), sent, tgPerChatSecond, tgChatBurst, chatSlack)
	}
	all := r.srv.AllSent()
	checkRate(t, "the bot", all, tgPerSecond, tgBurst, botSlack)
	t.Logf("%d replies, %d sent twice; at most %d in any second", r.total(), dups, busiestSecond(all))
	return dups
}

// inOrderWithRepeats reports whether got holds "1" to count in order, each
// once, with copies of replies already made anywhere after them.
func inOrderWithRepeats(got []string, count int) bool {
	next := 1
	for _, s := range got {
		v, err := strconv.Atoi(s)
		switch {
		case err != nil || v < 1:
			return false
		case v == next:
			next++
		case v > next:
			return false // one skipped, or out of order
		}
	}
	return next == count+1
}

// checkAfterRestarts is check for a run whose bot was started again after
// it exited while its journal could not record (see supervisor): the sends
// whose done marks were refused are made again after a start, so a chat's
// replies may go back to an earlier one and on from there, in order, at
// most maxRewinds times (a repeat of one reply is such a rewind too); no
// reply is missing or out of order otherwise. It returns the replies sent
// more than once.
func (r scaleRun) checkAfterRestarts(t *testing.T, maxRewinds int) int {
	t.Helper()
	dups := 0
	for c := range r.chats {
		id := r.first + int64(c)
		sent := r.srv.Sent(id)
		got := texts(sent)
		rewinds, high, prev := 0, 0, 0
		for i, s := range got {
			v, err := strconv.Atoi(s)
			switch {
			case err != nil || v < 1 || v > r.count:
				t.Fatalf("chat %d: reply %d is %q; want 1 to %d", id, i, s, r.count)
			case v <= prev:
				rewinds++
			case v != prev+1:
				t.Fatalf("chat %d got %q; want the replies in order, going back at most to an earlier one", id, got)
			}
			if v > high+1 {
				t.Fatalf("chat %d got %q: a reply skipped", id, got)
			}
			prev, high = v, max(high, v)
		}
		if high != r.count || rewinds > maxRewinds {
			t.Fatalf("chat %d got %q; want 1 to %d, going back at most %d times", id, got, r.count, maxRewinds)
		}
		dups += len(got) - r.count
		checkRate(t, fmt.Sprint("chat ", id), sent, tgPerChatSecond, tgChatBurst, chatSlack)
	}
	t.Logf("%d replies, %d sent again after a start", r.total(), dups)
	return dups
}

// checkRate fails unless sent (in the order accepted) kept to a token
// bucket of rate per second and burst: burst+k sends span at least the
// k/rate seconds of rateWindow, less slack.
func checkRate(t *testing.T, who string, sent []telegramtest.SentMessage, rate float64, burst int, slack time.Duration) {
	t.Helper()
	k := int(rate * rateWindow.Seconds()) // a window's worth above the burst
	for i := 0; i+burst+k < len(sent); i++ {
		span := sent[i+burst+k].At.Sub(sent[i].At)
		if min := rateWindow - slack; span < min {
			t.Fatalf("%s: %d sends within %v (from %v); Telegram allows %d in %v", who, burst+k+1, span, sent[i].At.Format(time.StampMilli), burst+k, rateWindow)
		}
	}
}

// busiestSecond returns the most sends accepted within one second.
func busiestSecond(sent []telegramtest.SentMessage) int {
	most := 0
	for i, j := 0, 0; j < len(sent); j++ {
		for sent[j].At.Sub(sent[i].At) >= time.Second {
			i++
		}
		most = max(most, j-i+1)
	}
	return most
}

// TestE2EScaleOutKills: three processes share 50 chats sending /count 8
// over 10 s; a worker is killed, later the gateway. Every reply arrives,
// in order, at most once twice per chat per kill, and within Telegram's
// limits; the takeover times are logged.
func TestE2EScaleOutKills(t *testing.T) {
	runParallel(t, 27*time.Second)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := scaleEnv(srv, startNATS(t))
	nodes := []*node{startNode(t, "n1", env), startNode(t, "n2", env), startNode(t, "n3", env)}
	gw := waitSpread(ctx, t, nodes)
	var worker *node
	var rest []*node
	for _, n := range nodes {
		if n != gw && worker == nil {
			worker = n
		} else if n != gw {
			rest = append(rest, n)
		}
	}

	run := scaleRun{srv: srv, chats: 50, count: 8, first: 5000}
	sending := make(chan struct{})
	go func() {
		defer close(sending)
		run.send(ctx, 10*time.Second)
	}()

	kill := func(pick func() *node, after int) time.Time {
		if err := srv.WaitUntil(ctx, func() bool { return srv.NumSent() >= after }); err != nil {
			t.Fatalf("before a kill: %v (%d replies sent)", err, srv.NumSent())
		}
		n := pick()
		if err := n.p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-n.p.done
		t.Logf("killed %s after %d replies", n.name, srv.NumSent())
		return time.Now()
	}
	workerKilled := kill(func() *node { return worker }, run.total()*20/100)
	// The gateway is killed next: the one of the two left that holds the
	// lease then (a loaded machine may have moved it since the start).
	survivor := rest[0]
	gwKilled := kill(func() *node {
		for gw.gauge("herald_cluster_leading") != 1 {
			if survivor.gauge("herald_cluster_leading") == 1 {
				gw, survivor = survivor, gw
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("neither %s nor %s leads", gw.name, survivor.name)
			case <-time.After(100 * time.Millisecond): // the gauges read again
			}
		}
		return gw
	}, run.total()*55/100)
	<-sending
	run.wait(ctx, t)

	const (
		pinnedTTL = 10 * time.Second // cluster.DefaultPinnedTTL
		leaseTTL  = 10 * time.Second // cluster.DefaultLeaseTTL
	)
	// The worker's partitions: the last of them to hand on an event that
	// waited, after the kill (before the gateway's).
	partTakeover := lastAfter(workerKilled, "cluster: took over a partition: its first event", gw, survivor)
	if gwKilled.Sub(workerKilled) < partTakeover {
		partTakeover = -1 // not told apart from the gateway's partitions
	}
	gwTakeover := firstAfter(gwKilled, "cluster: holding the lease: this member is the gateway", survivor)
	t.Logf("takeover after a worker's kill: %v for its partitions (target %v); after the gateway's: %v for the lease (target %v)",
		partTakeover, pinnedTTL+2*time.Second, gwTakeover, leaseTTL+2*time.Second)
	if gwTakeover < 0 {
		t.Fatalf("%s never became the gateway", survivor.name)
	}

	if code := survivor.p.stop(t, 90*time.Second); code != 0 {
		t.Fatalf("%s: exit code %d after SIGTERM; want 0", survivor.name, code)
	}
	run.check(t, 2)
	if logs := survivor.p.stderr.String(); strings.Contains(logs, "Conflict") {
		t.Fatalf("a process polled while another did (409 Conflict):\n%s", logs)
	}
}

// TestE2EScaleOutRebalance: a fourth process joins three mid-run, and the
// gateway leaves cleanly: nothing is lost, reordered or sent twice, and
// the lease moves at once.
func TestE2EScaleOutRebalance(t *testing.T) {
	runParallel(t, 15*time.Second)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env := scaleEnv(srv, startNATS(t))
	nodes := []*node{startNode(t, "n1", env), startNode(t, "n2", env), startNode(t, "n3", env)}
	gw := waitSpread(ctx, t, nodes)

	run := scaleRun{srv: srv, chats: 40, count: 8, first: 7000}
	sending := make(chan struct{})
	go func() {
		defer close(sending)
		run.send(ctx, 6*time.Second)
	}()
	if err := srv.WaitUntil(ctx, func() bool { return srv.NumSent() >= run.total()*20/100 }); err != nil {
		t.Fatal(err)
	}
	nodes = append(nodes, startNode(t, "n4", env))
	if err := srv.WaitUntil(ctx, func() bool { return srv.NumSent() >= run.total()*50/100 }); err != nil {
		t.Fatal(err)
	}
	left := time.Now()
	if code := gw.p.stop(t, 90*time.Second); code != 0 {
		t.Fatalf("%s: exit code %d after SIGTERM; want 0", gw.name, code)
	}
	t.Logf("the gateway %s left cleanly in %v, after %d replies", gw.name, time.Since(left).Round(time.Millisecond), srv.NumSent())
	var rest []*node
	for _, n := range nodes {
		if n != gw {
			rest = append(rest, n)
		}
	}
	moved := waitFirstAfter(ctx, left, "cluster: holding the lease: this member is the gateway", rest...)
	if moved < 0 {
		t.Fatal("no process became the gateway")
	}
	t.Logf("the lease moved %v after the gateway began to leave", moved)
	<-sending
	run.wait(ctx, t)
	if n4 := nodes[3]; n4.gauge("herald_cluster_partitions") <= 0 {
		t.Fatalf("%s joined but owns no partition", n4.name)
	}
	for _, n := range rest {
		if code := n.p.stop(t, 90*time.Second); code != 0 {
			t.Fatalf("%s: exit code %d after SIGTERM; want 0", n.name, code)
		}
	}
	run.check(t, 0)
}

// apiLog is a proxy in front of the fake Bot API for one process: it
// records when each send request of that process reached it.
type apiLog struct {
	srv *httptest.Server
	mu  sync.Mutex
	at  []time.Time
	all []string // every method called
}

func newAPILog(t *testing.T, api *telegramtest.Server) *apiLog {
	t.Helper()
	target, err := url.Parse(api.URL())
	if err != nil {
		t.Fatal(err)
	}
	l := &apiLog{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.all = append(l.all, r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:])
		if strings.HasSuffix(r.URL.Path, "/sendMessage") {
			l.at = append(l.at, time.Now())
		}
		l.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *apiLog) endpoint() string { return l.srv.URL + "/bot%s/%s" }

// methods returns the methods called, in order.
func (l *apiLog) methods() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all)
}

// since returns how many sends reached the proxy after t.
func (l *apiLog) since(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, at := range l.at {
		if at.After(t) {
			n++
		}
	}
	return n
}

// TestE2EScaleOutPausedGateway: the gateway is paused (SIGSTOP) longer
// than its lease while it sends; another process takes the lease and goes
// on. Resumed, the old gateway sends nothing more — its sends waiting for
// a token or a backoff are fenced — and every reply arrives in order.
func TestE2EScaleOutPausedGateway(t *testing.T) {
	runParallel(t, 22*time.Second)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env := scaleEnv(srv, startNATS(t)) // each node's TELEGRAM_API_ENDPOINT below wins
	logs := map[string]*apiLog{"n1": newAPILog(t, srv), "n2": newAPILog(t, srv)}
	var nodes []*node
	for _, name := range []string{"n1", "n2"} {
		nodes = append(nodes, startNode(t, name, append(slices.Clone(env), "TELEGRAM_API_ENDPOINT="+logs[name].endpoint())))
	}
	gw := waitSpread(ctx, t, nodes)
	other := nodes[0]
	if other == gw {
		other = nodes[1]
	}

	run := scaleRun{srv: srv, chats: 30, count: 10, first: 9000}
	go run.send(ctx, 2*time.Second)
	if err := srv.WaitUntil(ctx, func() bool { return srv.NumSent() >= run.total()*20/100 }); err != nil {
		t.Fatal(err)
	}
	if err := gw.p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	if err := (&lineWaiter{other.p.stderr}).wait(ctx, "cluster: holding the lease: this member is the gateway"); err != nil {
		t.Fatalf("%s never took the lease: %v", other.name, err)
	}
	t.Logf("%s took the lease %v after %s was paused", other.name, time.Since(paused).Round(time.Millisecond), gw.name)
	time.Sleep(2 * time.Second) // the new gateway sends meanwhile
	if err := gw.p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	run.wait(ctx, t)
	// One send may have passed the fence a moment before the pause and
	// reach the API after it (the send in flight): no more.
	if n := logs[gw.name].since(resumed); n > 1 {
		t.Fatalf("the old gateway %s made %d sends after it was resumed without its lease", gw.name, n)
	}
	for _, n := range nodes {
		if code := n.p.stop(t, 90*time.Second); code != 0 {
			t.Fatalf("%s: exit code %d after SIGTERM; want 0", n.name, code)
		}
	}
	// That send in flight may be a reply the new gateway made again and
	// went on from: it then comes after later replies of its chat.
	run.checkRepeats(t, 1, true)
}

// lineWaiter waits for a JSON log line with a message.
type lineWaiter struct{ b *lineBuffer }

func (w *lineWaiter) wait(ctx context.Context, msg string) error {
	return w.waitAny(ctx, msg)
}

// waitAny waits for a line with any of msgs.
func (w *lineWaiter) waitAny(ctx context.Context, msgs ...string) error {
	quoted := make([]string, len(msgs))
	for i, m := range msgs {
		quoted[i] = regexp.QuoteMeta(m)
	}
	_, err := w.b.waitFor(ctx, regexp.MustCompile(`"msg":"(?:`+strings.Join(quoted, "|")+`)"`))
	return err
}

// TestE2EScaleOutWebhook: three processes take a webhook behind a load
// balancer (the pusher sends each update to the next, and a failed one to
// the one after); a worker is killed. Each process records what it
// receives, only the gateway calls Telegram (setWebhook, the sends), and
// every reply arrives in order.
func TestE2EScaleOutWebhook(t *testing.T) {
	runParallel(t, 14*time.Second)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env := scaleEnv(srv, startNATS(t), // each node's TELEGRAM_API_ENDPOINT below wins
		"TELEGRAM_WEBHOOK_URL=https://bot.example/hook",
		"TELEGRAM_WEBHOOK_SECRET="+crashSecret,
		"TELEGRAM_BOT_USERNAME="+srv.Bot().UserName)
	var nodes []*node
	var urls []string
	logs := map[string]*apiLog{}
	for _, name := range []string{"n1", "n2", "n3"} {
		addr := testport.Addr(t)
		logs[name] = newAPILog(t, srv)
		urls = append(urls, "http://"+addr+"/")
		nodes = append(nodes, startNode(t, name, append(slices.Clone(env),
			"TELEGRAM_WEBHOOK_LISTEN="+addr, "TELEGRAM_API_ENDPOINT="+logs[name].endpoint())))
	}
	gw := waitSpread(ctx, t, nodes)
	for _, n := range nodes { // every process listens, the gateway included
		if err := (&lineWaiter{n.p.stderr}).wait(ctx, "telegram: serving the webhook"); err != nil {
			t.Fatalf("%s does not serve the webhook: %v", n.name, err)
		}
	}
	push := newWebhookPusher(ctx, urls...)
	defer push.stop()

	run := scaleRun{chats: 30, count: 10, first: 11000, srv: srv}
	for c := range run.chats {
		id := run.first + int64(c)
		push.message(id, tgbotapi.User{ID: id, FirstName: fmt.Sprint("User", c)}, fmt.Sprintf("/count@%s %d", srv.Bot().UserName, run.count))
	}
	var worker *node
	for _, n := range nodes {
		if n != gw {
			worker = n
			break
		}
	}
	if err := srv.WaitUntil(ctx, func() bool { return srv.NumSent() >= run.total()*30/100 }); err != nil {
		t.Fatal(err)
	}
	if err := worker.p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-worker.p.done
	t.Logf("killed %s after %d replies", worker.name, srv.NumSent())
	run.wait(ctx, t)
	// The gateway stops last: stopped before another process, it would
	// hand its lease over, and that process would rightly register the
	// webhook as the next gateway.
	for _, n := range append(slices.DeleteFunc(slices.Clone(nodes), func(n *node) bool { return n == worker || n == gw }), gw) {
		if code := n.p.stop(t, 90*time.Second); code != 0 {
			t.Fatalf("%s: exit code %d after SIGTERM; want 0", n.name, code)
		}
	}
	run.check(t, 1)
	for _, n := range nodes {
		m := logs[n.name].methods()
		switch {
		case n == gw && !slices.Contains(m, "setWebhook"):
			t.Fatalf("the gateway %s never registered the webhook: %q", n.name, m)
		case n != gw && len(m) > 0:
			t.Fatalf("%s is no gateway but called Telegram: %q", n.name, m)
		}
	}
}
