package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The lock people build on one Redis: SET key value NX PX ttl, value random per acquisition;
// released by the compare-and-delete script redis-py's Lock runs (LUA_RELEASE_SCRIPT). Waiting:
// redis-py's Lock.acquire by default (blocking, sleep=0.1 between tries), or a tight loop. No
// fencing token: the write is INCR of a shared counter, checked against the hand-off count.
type redisSystem struct {
	addr   string
	key    string
	store  string
	tight  bool
	sleep  time.Duration
	ttl    time.Duration
	admin  *redis.Client
	script *redis.Script
}

const redisLockTTL = 30 * time.Second

var releaseScript = redis.NewScript(`
local token = redis.call('get', KEYS[1])
if not token or token ~= ARGV[1] then
    return 0
end
redis.call('del', KEYS[1])
return 1`)

func newRedis(addr, root string, tight bool, sleep time.Duration) *redisSystem {
	return &redisSystem{addr: addr, key: root + "-lock", store: root + "-store", tight: tight, sleep: sleep,
		ttl: redisLockTTL, script: releaseScript}
}

func (s *redisSystem) HasToken() bool { return false }

func (s *redisSystem) client() *redis.Client {
	// One connection per contender, as a process with its own client would have.
	return redis.NewClient(&redis.Options{Addr: s.addr, PoolSize: 1, MaxRetries: -1,
		DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
}

func (s *redisSystem) Setup(ctx context.Context) error {
	s.admin = s.client()
	if err := s.admin.Del(ctx, s.key, s.store).Err(); err != nil {
		return fmt.Errorf("del: %w", err)
	}
	return nil
}

func (s *redisSystem) Teardown() {
	if s.admin == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.admin.Del(ctx, s.key, s.store).Err()
	s.admin.Close()
	s.admin = nil
}

type redisLocker struct {
	s     *redisSystem
	c     *redis.Client
	value string
}

func (s *redisSystem) NewLocker(ctx context.Context, _ int) (Locker, error) {
	c := s.client()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, err
	}
	return &redisLocker{s: s, c: c}, nil
}

func (l *redisLocker) Acquire(ctx context.Context) (int64, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, err
	}
	l.value = hex.EncodeToString(b[:])
	for {
		err := l.c.Do(ctx, "SET", l.s.key, l.value, "NX", "PX", l.s.ttl.Milliseconds()).Err()
		if err == nil {
			return 0, nil
		}
		if !errors.Is(err, redis.Nil) {
			return 0, err
		}
		if l.s.tight {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			continue
		}
		select {
		case <-time.After(l.s.sleep):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func (l *redisLocker) Write(ctx context.Context, _ int64, expected int64) (bool, error) {
	n, err := l.c.Incr(ctx, l.s.store).Result()
	if err != nil {
		return false, err
	}
	return n == expected+1, nil
}

func (l *redisLocker) Release(ctx context.Context) (bool, error) {
	n, err := l.s.script.Run(ctx, l.c, []string{l.s.key}, l.value).Int64()
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

func (l *redisLocker) Holds(ctx context.Context) (bool, error) {
	v, err := l.c.Get(ctx, l.s.key).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return v == l.value, nil
}

// Told: nothing tells a Redis lock holder that its key is gone.
func (l *redisLocker) Told() bool { return false }

func (l *redisLocker) Close() { l.c.Close() }
