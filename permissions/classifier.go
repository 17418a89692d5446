package permissions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Classifier is an optional judge consulted when no rule, table or mode
// decides a command. It never overrides an explicit rule, a security
// check or a path constraint: by the time it is asked, none of them had an
// opinion.
type Classifier interface {
	Classify(ctx context.Context, req ClassifierRequest) (ClassifierResult, error)
}

// ClassifierRequest is what a classifier is told.
type ClassifierRequest struct {
	Command  string   `json:"command"`
	Cwd      string   `json:"cwd"`
	Mode     string   `json:"mode"`
	ReadOnly bool     `json:"readonly"`
	Warnings []string `json:"warnings"`
}

// ClassifierResult is a classifier's answer.
type ClassifierResult struct {
	// Behavior is "allow", "deny" or "ask".
	Behavior string `json:"behavior"`
	// Confidence is in [0, 1].
	Confidence float64 `json:"confidence"`
	Reason     string  `json:"reason,omitempty"`
}

// ConfidenceThreshold: a classifier decides only when strictly more
// confident than this; otherwise the command asks.
const ConfidenceThreshold = 0.9

// classify asks the classifier. ok is false when it has no usable answer
// (the command then asks).
func (s *step) classify(ctx context.Context) (policy.Decision, bool) {
	req := ClassifierRequest{Command: s.req.Command, Cwd: s.cwd, Mode: s.mode,
		ReadOnly: s.res.ReadOnly, Warnings: s.res.Warnings}
	r, err := s.e.opts.Classifier.Classify(ctx, req)
	if err != nil {
		return ask("the classifier failed: " + err.Error()), true
	}
	if math.IsNaN(r.Confidence) || r.Confidence <= ConfidenceThreshold || r.Confidence > 1 {
		return policy.Decision{}, false
	}
	why := fmt.Sprintf("classifier (confidence %.2f)", r.Confidence)
	if r.Reason != "" {
		why += ": " + r.Reason
	}
	switch r.Behavior {
	case "allow":
		return policy.Decision{Verdict: policy.Allow, Reason: "allowed by the " + why, Rule: "classifier"}, true
	case "deny":
		return policy.Decision{Verdict: policy.Deny, Reason: "denied by the " + why, Rule: "classifier"}, true
	case "ask":
		return policy.Decision{Verdict: policy.Ask, Reason: "the " + why + " asks", Rule: "classifier"}, true
	}
	return ask(fmt.Sprintf("the classifier answered %q, not allow, deny or ask", r.Behavior)), true
}

// CommandClassifier runs an external program for each request: the request
// is written to its standard input as one JSON object, and it answers on
// standard output with {"behavior": "allow"|"deny"|"ask", "confidence": N}.
// A failure, a timeout or a malformed answer asks.
type CommandClassifier struct {
	// Path is the program; Args its arguments.
	Path string
	Args []string
	// Timeout bounds one call. If zero, 10 seconds.
	Timeout time.Duration
	// Env is the program's environment. If nil, moat's own.
	Env []string
}

// maxClassifierOutput bounds what is read from the program.
const maxClassifierOutput = 64 << 10

// Classify runs the program once.
func (c *CommandClassifier) Classify(ctx context.Context, req ClassifierRequest) (ClassifierResult, error) {
	if c.Path == "" {
		return ClassifierResult{}, errors.New("no classifier program")
	}
	t := c.Timeout
	if t <= 0 {
		t = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	in, err := json.Marshal(req)
	if err != nil {
		return ClassifierResult{}, err
	}
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.Env = c.Env
	cmd.Stdin = bytes.NewReader(append(in, '\n'))
	var out limitedBuffer
	out.max = maxClassifierOutput
	cmd.Stdout = &out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ClassifierResult{}, fmt.Errorf("classifier %s: timed out after %v", c.Path, t)
		}
		return ClassifierResult{}, fmt.Errorf("classifier %s: %w", c.Path, err)
	}
	if out.over {
		return ClassifierResult{}, fmt.Errorf("classifier %s: answer longer than %d bytes", c.Path, maxClassifierOutput)
	}
	var r ClassifierResult
	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	if err := dec.Decode(&r); err != nil {
		return ClassifierResult{}, fmt.Errorf("classifier %s: malformed answer: %v", c.Path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return ClassifierResult{}, fmt.Errorf("classifier %s: more than one JSON value in the answer", c.Path)
	}
	return r, nil
}

type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		b.over = true
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
