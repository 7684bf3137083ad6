package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Op is one line of the history: one client operation (or one observation, such as a watch event), with
// its invocation and completion times in Unix nanoseconds. Type is "ok", "fail" (definitely not applied)
// or "info" (unknown: a timeout or a lost connection; the operation may or may not have taken effect).
type Op struct {
	W       string   `json:"w"`                 // workload
	Client  int      `json:"client"`            // process id; a client is retired after an info op
	Session int64    `json:"session,omitempty"` // ZooKeeper session id
	F       string   `json:"f"`
	Key     string   `json:"key,omitempty"`
	Value   int64    `json:"value,omitempty"` // value written, or the version a cas expects
	Ver     int32    `json:"ver,omitempty"`   // version expected (cas) or returned
	OutVal  int64    `json:"out_val,omitempty"`
	OutVer  int32    `json:"out_ver,omitempty"`
	Czxid   int64    `json:"czxid,omitempty"`
	Mzxid   int64    `json:"mzxid,omitempty"`
	Pzxid   int64    `json:"pzxid,omitempty"`
	Seq     int64    `json:"seq,omitempty"`
	Names   []string `json:"names,omitempty"`
	Type    string   `json:"type"`
	Err     string   `json:"err,omitempty"`
	Call    int64    `json:"call"`
	Ret     int64    `json:"ret"`
	Server  string   `json:"server,omitempty"`
}

// History collects ops from every workload and writes them, one JSON line each, as they complete.
type History struct {
	mu  sync.Mutex
	ops []Op
	w   *bufio.Writer
	f   *os.File
}

func NewHistory(path string) (*History, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &History{f: f, w: bufio.NewWriter(f)}, nil
}

func (h *History) Add(op Op) {
	b, _ := json.Marshal(op)
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.w.Write(b)
	h.w.WriteByte('\n')
	h.mu.Unlock()
}

func (h *History) Ops(w string) []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Op
	for _, op := range h.ops {
		if w == "" || op.W == w {
			out = append(out, op)
		}
	}
	return out
}

func (h *History) Close() {
	h.mu.Lock()
	h.w.Flush()
	h.f.Close()
	h.mu.Unlock()
}

func now() int64 { return time.Now().UnixNano() }

// errTimeout marks an operation the driver gave up waiting for.
var errTimeout = errors.New("operation timed out")

// classify maps a client error to a history type: errors that prove the operation did not happen are
// "fail"; anything that leaves it open (connection loss, expiry with the request in flight, a timeout)
// is "info".
func classify(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrBadVersion),
		errors.Is(err, zk.ErrNotEmpty), errors.Is(err, zk.ErrBadArguments), errors.Is(err, zk.ErrNoChildrenForEphemerals):
		return "fail"
	default:
		return "info"
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// timed runs fn with a deadline; on expiry it returns errTimeout and leaves fn running (its client is
// then retired by the caller, as Jepsen retires a process after an indeterminate operation).
func timed(d time.Duration, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return errTimeout
	}
}
