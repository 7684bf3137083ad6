package main

import (
	"fmt"
	"io"
	"log"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

var clientIDs int64

// Client is one go-zookeeper connection (a "process" in Jepsen's terms) with what the driver learned
// from its session events: how many times it reconnected (epoch), whether it was told its session expired.
type Client struct {
	ID      int
	Conn    *zk.Conn
	mu      sync.Mutex
	epoch   int32
	expired bool
	lost    bool // disconnected at least once
	onEvent func(c *Client, ev zk.Event)
}

type zkLogger struct{ l *log.Logger }

func (z zkLogger) Printf(format string, args ...interface{}) { z.l.Printf(format, args...) }

var clientLog = zkLogger{log.New(io.Discard, "", 0)}

func SetClientLog(w io.Writer) { clientLog = zkLogger{log.New(w, "", log.LstdFlags|log.Lmicroseconds)} }

// NewClient connects to the servers (in a shuffled order, so clients spread over the members and
// reconnect to others) and waits up to wait for a session.
func NewClient(servers []string, sessionTimeout, wait time.Duration, rng *rand.Rand, onEvent func(*Client, zk.Event)) (*Client, error) {
	s := append([]string(nil), servers...)
	if rng != nil {
		rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	}
	c := &Client{ID: int(atomic.AddInt64(&clientIDs, 1)), onEvent: onEvent}
	connected := make(chan struct{}, 1)
	cb := func(ev zk.Event) {
		if ev.Type == zk.EventSession {
			c.mu.Lock()
			switch ev.State {
			case zk.StateHasSession:
				c.epoch++
				select {
				case connected <- struct{}{}:
				default:
				}
			case zk.StateDisconnected:
				c.lost = true
			case zk.StateExpired:
				c.expired = true
			}
			c.mu.Unlock()
		}
		if c.onEvent != nil {
			c.onEvent(c, ev)
		}
	}
	conn, _, err := zk.Connect(s, sessionTimeout, zk.WithLogger(clientLog), zk.WithEventCallback(cb))
	if err != nil {
		return nil, err
	}
	c.Conn = conn
	select {
	case <-connected:
		return c, nil
	case <-time.After(wait):
		go conn.Close()
		return nil, fmt.Errorf("no session within %s", wait)
	}
}

func (c *Client) Epoch() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

func (c *Client) Expired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.expired
}

func (c *Client) Lost() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

// Retire closes the connection in the background: after an indeterminate op the client is not reused.
func (c *Client) Retire() { go c.Conn.Close() }
