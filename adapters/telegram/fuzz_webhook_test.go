package telegram

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/heraldbot/herald/platform"
)

// FuzzWebhookBody posts arbitrary bodies to the webhook handler: it must
// answer 200 (handled or skipped) or 400 (not JSON), never panic, and hand
// on only events of the update's ID.
func FuzzWebhookBody(f *testing.F) {
	for _, s := range []string{
		updateJSON(1, "hello"),
		`{"update_id":2,"callback_query":{"id":"c","data":"x"}}`,
		`{"update_id":3,"message":"not an object"}`,
		`{"update_id":"4"}`, `{"update_id":-5}`, `{"update_id":1e3}`,
		`[]`, `null`, `"x"`, `{`, ``, `{"update_id":6,"message":{"text":"/a@herald_bot b","entities":[{"type":"bot_command","offset":0,"length":99}]}}`,
	} {
		f.Add([]byte(s))
	}
	a, err := New(Config{Token: testToken, Mode: Webhook})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got []platform.Event
		rs := testRunState(func(ev platform.Event) error {
			got = append(got, ev)
			return nil
		})
		rs.log = a.log
		a.run.Store(rs)
		defer a.run.Store(nil)
		w := httptest.NewRecorder()
		a.WebhookHandler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(body))))
		if w.Code != http.StatusOK && w.Code != http.StatusBadRequest {
			t.Fatalf("status %d for %q", w.Code, body)
		}
		for _, ev := range got {
			id, _, _ := strings.Cut(ev.ID, ".")
			if n, err := strconv.Atoi(id); err != nil || n <= 0 || ev.Platform != "telegram" {
				t.Fatalf("event %+v from %q", ev, body)
			}
		}
	})
}
