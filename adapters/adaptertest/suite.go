package adaptertest

import (
	"testing"
)

// TestAdapter runs the conformance suite against the adapter h builds, as
// subtests of t: "Name", "Run/…", "Send/…" and "Fault/…" (run one with, for
// example, go test -run 'Conformance/Send/Order'). Each subtest calls h
// for a new adapter and peer; checks that need a feature f says the
// platform lacks are skipped or relaxed, as the [Features] fields say. The
// package doc lists what the subtests check.
//
// TestAdapter calls t.Fatal if h is nil. It runs the subtests one after
// another, and may be called from a parallel test.
func TestAdapter(t *testing.T, h Harness, f Features) {
	t.Helper()
	if h == nil {
		t.Fatal("adaptertest: TestAdapter needs a Harness")
	}
	groups := []struct {
		name  string
		tests []subtest
	}{
		{"Name", nil},
		{"Run", []subtest{
			{"Events", testEvents},
			{"Stop", testStop},
			{"CanceledContext", testRunCanceled},
			{"StopTaking", testStopTaking},
			{"Download", testDownload},
			{"CallbackAnswer", testCallbackAnswer},
			{"Inline", testInline},
		}},
		{"Send", []subtest{
			{"Text", testSendText},
			{"Reply", testReply},
			{"Order", testSendOrder},
			{"ConcurrentChats", testConcurrentChats},
			{"ConcurrentSameChat", testConcurrentSameChat},
			{"ParseMode", testParseMode},
			{"Buttons", testButtons},
			{"Photo", testPhoto},
			{"LongText", testLongText},
			{"Invalid", testInvalid},
			{"Canceled", testCanceled},
			{"DeadlineExceeded", testDeadlineExceeded},
			{"CancelInFlight", testCancelInFlight},
			{"DeadlineInFlight", testDeadlineInFlight},
			{"AfterRun", testSendAfterRun},
			{"Edit", testEdit},
			{"Media", testMedia},
			{"Album", testAlbum},
			{"Delete", testDelete},
			{"ReplyKeyboard", testReplyKeyboard},
			{"ChatAction", testChatAction},
			{"Topics", testTopics},
			{"Reactions", testReactions},
			{"Stream", testStream},
		}},
		{"Fault", []subtest{
			{"Permanent", testFaultPermanent},
			{"RetryAfter", testFaultRetryAfter},
			{"Transient", testFaultTransient},
		}},
	}
	for _, g := range groups {
		if g.tests == nil {
			t.Run(g.name, func(t *testing.T) { testName(t, h, f) })
			continue
		}
		t.Run(g.name, func(t *testing.T) {
			for _, st := range g.tests {
				t.Run(st.name, func(t *testing.T) { st.fn(t, h, f) })
			}
		})
	}
}

// subtest is one check of the suite.
type subtest struct {
	name string
	fn   func(t *testing.T, h Harness, f Features)
}
