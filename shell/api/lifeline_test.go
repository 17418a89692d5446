//go:build linux

package api

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/shell/api/client"
)

// TestHoldSession: a session held by a connection (GET .../lifeline) is
// closed, with what runs in it, when that connection goes away; one closed
// by DELETE ends the hold; another session is untouched.
func TestHoldSession(t *testing.T) {
	f := newFixture(t, nil)
	ctx := ctxT(t)
	s := f.session(t, client.SessionRequest{})
	other := f.session(t, client.SessionRequest{})
	marker := testutil.SleepMarker(300)
	if _, err := f.c.Start(ctx, s.ID, client.CommandRequest{Command: "sleep " + marker}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); len(testutil.Procs("sleep "+marker, -1)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the background sleep never ran")
		}
	}
	hold, drop := context.WithCancel(ctx)
	held := make(chan error, 1)
	go func() { held <- f.c.HoldSession(hold, s.ID) }()
	time.Sleep(100 * time.Millisecond) // the hold is in place
	drop()                             // the client goes away
	<-held
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := f.c.Session(ctx, s.ID)
		var ae *client.Error
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session outlived its lifeline: %v", err)
		}
	}
	// (The session leaves the list before its close has killed everything:
	// wait for that too.)
	for deadline := time.Now().Add(10 * time.Second); len(testutil.Procs("sleep "+marker, -1)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the session's command outlived its lifeline: %v", testutil.Procs("sleep "+marker, -1))
		}
	}
	if _, err := f.c.Session(ctx, other.ID); err != nil {
		t.Errorf("another session was closed too: %v", err)
	}
	// DELETE ends the hold.
	go func() { held <- f.c.HoldSession(ctx, other.ID) }()
	time.Sleep(100 * time.Millisecond)
	if err := f.c.CloseSession(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-held:
		if err != nil {
			t.Errorf("the hold of a closed session: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the hold did not end with its session")
	}
	// Holding a session that does not exist is 404.
	var ae *client.Error
	if err := f.c.HoldSession(ctx, "s0000"); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("hold of no session: %v", err)
	}
}
