package operator

import (
	"context"
	"errors"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

var _ manager.LeaderElectionRunnable = delayedSetup{}

func TestDelayedSetup(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name     string
		ready    bool
		setupErr error
		wantRan  bool
		wantErr  error
	}{
		{name: "setup failure stops the manager", ready: true, setupErr: errBoom, wantRan: true, wantErr: errBoom},
		{name: "setup succeeds", ready: true, wantRan: true},
		{name: "never ready: returns at shutdown without setup", ready: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready := make(chan struct{})
			if tt.ready {
				close(ready)
			}
			ran := false
			d := delayedSetup{
				ready: ready,
				what:  "test webhook",
				setup: func() error { ran = true; return tt.setupErr },
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			err := d.Start(ctx)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Start() = %v, want %v", err, tt.wantErr)
			}
			if err != nil && err.Error() != "set up test webhook: boom" {
				t.Errorf("Start() error text = %q", err.Error())
			}
			if ran != tt.wantRan {
				t.Errorf("setup ran = %v, want %v", ran, tt.wantRan)
			}
			if d.NeedLeaderElection() {
				t.Error("NeedLeaderElection() = true: the webhook must be set up on every replica")
			}
		})
	}
}
