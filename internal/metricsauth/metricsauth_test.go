package metricsauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeReviewer accepts the tokens in users and allows what allowed lists ("user verb path"); it
// counts its calls and fails them while err is set.
type fakeReviewer struct {
	users       map[string]string // token → user name
	allowed     map[string]bool
	err         error
	authn, auth int
	lastAuthz   string
}

func (f *fakeReviewer) Authenticate(_ context.Context, token string) (authnv1.UserInfo, bool, error) {
	f.authn++
	if f.err != nil {
		return authnv1.UserInfo{}, false, f.err
	}
	name, ok := f.users[token]
	return authnv1.UserInfo{Username: name, Groups: []string{"g"}}, ok, nil
}

func (f *fakeReviewer) Authorize(_ context.Context, user authnv1.UserInfo, verb, path string) (bool, string, error) {
	f.auth++
	if f.err != nil {
		return false, "", f.err
	}
	f.lastAuthz = user.Username + " " + verb + " " + path
	return f.allowed[f.lastAuthz], "no rule", nil
}

type step struct {
	name      string
	advance   time.Duration
	header    string
	path      string
	err       error
	want      int
	wantAuthn int // TokenReviews after the step, in all
	wantAuthz int // SubjectAccessReviews after the step, in all
}

// TestFilter runs one sequence of requests against one filter, so that each step also shows what
// the caches kept from the steps before it.
func TestFilter(t *testing.T) {
	steps := []step{
		{name: "no header", path: "/metrics", want: 401},
		{name: "basic auth", header: "Basic dXNlcjpwYXNz", path: "/metrics", want: 401},
		{name: "empty bearer", header: "Bearer ", path: "/metrics", want: 401},
		{name: "unknown token", header: "Bearer nope", path: "/metrics", want: 401, wantAuthn: 1},
		{name: "unknown token, cached", header: "Bearer nope", path: "/metrics", want: 401, wantAuthn: 1},
		{name: "unknown token after a minute", advance: time.Minute + time.Second, header: "Bearer nope",
			path: "/metrics", want: 401, wantAuthn: 2},
		{name: "reader", header: "Bearer reader-token", path: "/metrics", want: 200, wantAuthn: 3, wantAuthz: 1},
		{name: "reader, lower-case scheme, cached", header: "bearer reader-token", path: "/metrics", want: 200,
			wantAuthn: 3, wantAuthz: 1},
		{name: "reader on another path", header: "Bearer reader-token", path: "/debug/pprof/", want: 403,
			wantAuthn: 3, wantAuthz: 2},
		{name: "denial cached", header: "Bearer reader-token", path: "/debug/pprof/", want: 403,
			wantAuthn: 3, wantAuthz: 2},
		{name: "denial asked again after 30 s", advance: 31 * time.Second, header: "Bearer reader-token",
			path: "/debug/pprof/", want: 403, wantAuthn: 3, wantAuthz: 3},
		{name: "allowance and token still cached", header: "Bearer reader-token", path: "/metrics", want: 200,
			wantAuthn: 3, wantAuthz: 3},
		{name: "both asked again after 5 min", advance: 5 * time.Minute, header: "Bearer reader-token",
			path: "/metrics", want: 200, wantAuthn: 4, wantAuthz: 4},
		{name: "other user", header: "Bearer stranger-token", path: "/metrics", want: 403, wantAuthn: 5,
			wantAuthz: 5},
		{name: "SubjectAccessReview fails", header: "Bearer stranger-token", path: "/other", err: errors.New("boom"),
			want: 500, wantAuthn: 5, wantAuthz: 6},
		{name: "its failure not cached", header: "Bearer stranger-token", path: "/other", want: 403, wantAuthn: 5,
			wantAuthz: 7},
		{name: "TokenReview fails", header: "Bearer new-token", path: "/metrics", err: errors.New("boom"),
			want: 500, wantAuthn: 6, wantAuthz: 7},
		{name: "its failure not cached", header: "Bearer new-token", path: "/metrics", want: 401, wantAuthn: 7,
			wantAuthz: 7},
	}
	reviewer := &fakeReviewer{
		users:   map[string]string{"reader-token": "reader", "stranger-token": "stranger"},
		allowed: map[string]bool{"reader get /metrics": true},
	}
	clk := clocktesting.NewFakeClock(time.Now())
	var served []string
	next := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		served = append(served, req.Header.Get("Authorization"))
		_, _ = w.Write([]byte("ok"))
	})
	handler, err := New(reviewer, clk)(logr.Discard(), next)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		clk.Step(s.advance)
		reviewer.err = s.err
		req := httptest.NewRequest(http.MethodGet, s.path, nil)
		if s.header != "" {
			req.Header.Set("Authorization", s.header)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != s.want || reviewer.authn != s.wantAuthn || reviewer.auth != s.wantAuthz {
			t.Fatalf("%s: status %d, %d TokenReviews, %d SubjectAccessReviews; want %d, %d, %d (body %q)",
				s.name, rec.Code, reviewer.authn, reviewer.auth, s.want, s.wantAuthn, s.wantAuthz, rec.Body)
		}
		if s.want == 200 && (len(served) == 0 || served[len(served)-1] != "") {
			t.Fatalf("%s: the handler saw Authorization %q, want it removed", s.name, served)
		}
	}
	if reviewer.lastAuthz != "stranger get /other" {
		t.Errorf("last SubjectAccessReview %q, want the user, the lower-case verb and the path", reviewer.lastAuthz)
	}
	if want := 4; len(served) != want {
		t.Errorf("served %d requests, want %d", len(served), want)
	}
}
