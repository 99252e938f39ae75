// Package metricsauth guards the metrics endpoints of the operator and the node agent: a request
// must carry a bearer token that the API server accepts (a TokenReview), and its user must be
// allowed the request's verb on the request's non-resource URL (a SubjectAccessReview), for
// example by ClusterRole lvms-metrics-reader. Answers are cached as kube-rbac-proxy and
// controller-runtime's metrics filter cache them: a token's review for a minute, an allowed
// request for five minutes, a denied one for 30 seconds; errors are not cached.
//
// It does what controller-runtime's pkg/metrics/filters does, without that package's
// dependencies: those (k8s.io/apiserver's authentication and authorization stacks, cel-go,
// OpenTelemetry) were 182 of the binary's packages and 8.8 MB of its 57.6 MB, paid in every
// process's start and resident pages.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long answers are kept, and how long one review may take.
const (
	tokenTTL      = time.Minute
	allowTTL      = 5 * time.Minute
	denyTTL       = 30 * time.Second
	reviewTimeout = 10 * time.Second
	// cacheSize bounds each cache: a metrics endpoint has a handful of clients.
	cacheSize = 1024
)

// Reviewer asks the API server about a token and a request. The API server's implementation is
// APIReviewer; tests use a fake.
type Reviewer interface {
	// Authenticate returns the token's user, or false when the API server does not accept it.
	Authenticate(ctx context.Context, token string) (authnv1.UserInfo, bool, error)
	// Authorize reports whether user may do verb on the non-resource URL path, and why not.
	Authorize(ctx context.Context, user authnv1.UserInfo, verb, path string) (bool, string, error)
}

// FilterProvider is a metricsserver.Options.FilterProvider: the filter of New on the API server's
// TokenReview and SubjectAccessReview, as the server's own identity.
func FilterProvider(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	reviewer, err := NewAPIReviewer(config, httpClient)
	if err != nil {
		return nil, err
	}
	return New(reviewer, clock.RealClock{}), nil
}

// New returns a filter that serves a request only for an authenticated, authorised user; others
// get 401 (no token, or a token the API server does not accept), 403 (not allowed) or 500 (the
// API server could not answer). The token is removed from the request before it is served.
func New(reviewer Reviewer, clk clock.Clock) metricsserver.Filter {
	g := &guard{
		reviewer: reviewer,
		tokens:   cache.NewLRUExpireCacheWithClock(cacheSize, clk),
		verdicts: cache.NewLRUExpireCacheWithClock(cacheSize, clk),
	}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			g.serve(log, next, w, req)
		}), nil
	}
}

type guard struct {
	reviewer Reviewer
	tokens   *cache.LRUExpireCache // sha256 of a token → tokenAnswer
	verdicts *cache.LRUExpireCache // key of user, verb, path → bool (allowed)
}

type tokenAnswer struct {
	user          authnv1.UserInfo
	authenticated bool
}

func (g *guard) serve(log logr.Logger, next http.Handler, w http.ResponseWriter, req *http.Request) {
	token, ok := bearerToken(req)
	if !ok {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	user, ok, err := g.authenticate(req.Context(), token)
	if err != nil {
		log.Error(err, "Authentication of a metrics request failed", "path", req.URL.Path)
		http.Error(w, "Authentication failed", http.StatusInternalServerError)
		return
	}
	if !ok {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	verb := strings.ToLower(req.Method)
	allowed, reason, err := g.authorize(req.Context(), user, verb, req.URL.Path)
	if err != nil {
		msg := fmt.Sprintf("Authorization for user %s failed", user.Username)
		log.Error(err, msg, "path", req.URL.Path)
		http.Error(w, msg, http.StatusInternalServerError)
		return
	}
	if !allowed {
		log.V(1).Info("Metrics request denied", "user", user.Username, "verb", verb, "path", req.URL.Path,
			"reason", reason)
		http.Error(w, fmt.Sprintf("Authorization denied for user %s", user.Username), http.StatusForbidden)
		return
	}
	req.Header.Del("Authorization")
	next.ServeHTTP(w, req)
}

// bearerToken is the token of an "Authorization: Bearer <token>" header.
func bearerToken(req *http.Request) (string, bool) {
	scheme, token, found := strings.Cut(strings.TrimSpace(req.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !found || !strings.EqualFold(scheme, "bearer") || token == "" {
		return "", false
	}
	return token, true
}

func (g *guard) authenticate(ctx context.Context, token string) (authnv1.UserInfo, bool, error) {
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	if v, ok := g.tokens.Get(key); ok {
		a := v.(tokenAnswer)
		return a.user, a.authenticated, nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	user, ok, err := g.reviewer.Authenticate(ctx, token)
	if err != nil {
		return authnv1.UserInfo{}, false, err
	}
	g.tokens.Add(key, tokenAnswer{user: user, authenticated: ok}, tokenTTL)
	return user, ok, nil
}

func (g *guard) authorize(ctx context.Context, user authnv1.UserInfo, verb, path string) (bool, string, error) {
	// The key holds everything the review is asked about; json marshals maps in key order.
	raw, err := json.Marshal([]any{user, verb, path})
	if err != nil {
		return false, "", fmt.Errorf("key of the authorization cache: %w", err)
	}
	sum := sha256.Sum256(raw)
	key := hex.EncodeToString(sum[:])
	if v, ok := g.verdicts.Get(key); ok {
		return v.(bool), "cached", nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	allowed, reason, err := g.reviewer.Authorize(ctx, user, verb, path)
	if err != nil {
		return false, "", err
	}
	ttl := denyTTL
	if allowed {
		ttl = allowTTL
	}
	g.verdicts.Add(key, allowed, ttl)
	return allowed, reason, nil
}

// APIReviewer asks the API server through authentication.k8s.io/v1 TokenReview and
// authorization.k8s.io/v1 SubjectAccessReview.
type APIReviewer struct {
	tokenReviews  authnclient.TokenReviewInterface
	accessReviews authzclient.SubjectAccessReviewInterface
}

// NewAPIReviewer returns the reviewer of the API server that config reaches.
func NewAPIReviewer(config *rest.Config, httpClient *http.Client) (*APIReviewer, error) {
	authn, err := authnclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("client of authentication.k8s.io: %w", err)
	}
	authz, err := authzclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, fmt.Errorf("client of authorization.k8s.io: %w", err)
	}
	return &APIReviewer{tokenReviews: authn.TokenReviews(), accessReviews: authz.SubjectAccessReviews()}, nil
}

// Authenticate creates a TokenReview of token with the API server's default audiences.
func (r *APIReviewer) Authenticate(ctx context.Context, token string) (authnv1.UserInfo, bool, error) {
	review := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}
	got, err := r.tokenReviews.Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return authnv1.UserInfo{}, false, fmt.Errorf("TokenReview: %w", err)
	}
	return got.Status.User, got.Status.Authenticated, nil
}

// Authorize creates a SubjectAccessReview of user doing verb on the non-resource URL path.
func (r *APIReviewer) Authorize(ctx context.Context, user authnv1.UserInfo, verb, path string) (bool, string, error) {
	extra := make(map[string]authzv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	review := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User:                  user.Username,
		UID:                   user.UID,
		Groups:                user.Groups,
		Extra:                 extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: verb},
	}}
	got, err := r.accessReviews.Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("SubjectAccessReview: %w", err)
	}
	// An evaluation error is not a failure: RBAC reports a binding to a missing role in it and
	// still decides.
	reason := strings.TrimSpace(got.Status.Reason + " " + got.Status.EvaluationError)
	return got.Status.Allowed, reason, nil
}
